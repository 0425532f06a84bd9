// An agent's configuration as clients send it and as the store keeps it (decisions.md, "Agents").
// Defaults live here, in one visible place.
import { z } from 'zod';
import { SecretFields, writeOnlySecret, writeOnlyStringMap } from '../secrets/fields.ts';
import { urlFieldsOf } from '../schema-fields.ts';

export const E164 = z.string().regex(/^\+[0-9]{8,15}$/, 'must be an E.164 number: + and 8 to 15 digits');

export const AGENT_DEFAULTS = {
  temperature: 1.0,
  voiceEngine: 'flite',
  voiceId: 'slt',
  /** The most accurate embedded recogniser, phrase hints included (README, "Speech recognition engines"). */
  sttEngine: 'moonshine',
  language: 'en-US',
  inactivityTimeoutMs: 30_000,
  maxDurationMs: 3_600_000,
  endpointingMs: 500,
  /** An agent without an `endpointing` setting; see bench:turns in docs/performance.md for why. */
  endpointingMode: 'semantic' as 'semantic' | 'silence',
  endpointingMinMs: 250,
  endpointingMaxMs: 2_000,
  interruptionSensitivity: 0.5,
  voicemailDetectTimeoutMs: 30_000,
  dtmfTerminator: '#',
  dtmfTimeoutMs: 2_500,
  toolTimeoutSeconds: 10,
  toolTimeoutMaxSeconds: 120,
} as const;

/** OpenAPI 3.0 object schema of a tool's arguments (type object, properties, required). */
export const ToolParametersSchema = z
  .object({
    type: z.literal('object'),
    properties: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
    required: z.array(z.string()).optional(),
  })
  .catchall(z.unknown());

const toolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64');

export const ApiToolSchema = z.strictObject({
  type: z.literal('api'),
  name: toolName,
  description: z.string().max(4000).default(''),
  url: z.url({ protocol: /^https?$/ }),
  method: z.enum(['GET', 'POST', 'PUT', 'DELETE']).default('POST'),
  parameters: ToolParametersSchema.default({ type: 'object', properties: {} }),
  timeout: z.number().positive().max(AGENT_DEFAULTS.toolTimeoutMaxSeconds).default(AGENT_DEFAULTS.toolTimeoutSeconds),
  headers: writeOnlyStringMap('write-only: sent with every request of the tool, never returned').optional(),
  /** Say a line as soon as the tool starts; without it, a tool slower than a second gets "One moment, please." */
  speak_during_execution: z.boolean().optional(),
  execution_message: z.string().trim().min(1).max(500).optional(),
});

export const EndCallToolSchema = z.strictObject({
  type: z.literal('end_call'),
  name: toolName.default('end_call'),
  description: z.string().max(4000).default('End the call once the conversation is complete and you have said goodbye.'),
});

export const TransferCallToolSchema = z.strictObject({
  type: z.literal('transfer_call'),
  name: toolName.default('transfer_call'),
  description: z.string().max(4000).default('Transfer the caller to a human at another number.'),
  transfer_to: E164,
  /** Said before the caller is put through, after whatever the model said with the call; none: only the model's words. */
  transfer_message: z.string().trim().min(1).max(500).optional(),
  /**
   * cold: the caller is put through at once. warm: the caller hears hold music while the
   * destination is called; whoever answers hears a summary of the call first, then both are bridged.
   */
  mode: z.enum(['cold', 'warm']).default('cold'),
});

export const PressDigitsToolSchema = z.strictObject({
  type: z.literal('press_digits'),
  name: toolName.default('press_digits'),
  description: z
    .string()
    .max(4000)
    .default('Press keys on the phone keypad, for example to choose an option in a phone menu. The other side hears the keypad tones.'),
});

export const AgentToolSchema = z.discriminatedUnion('type', [ApiToolSchema, EndCallToolSchema, TransferCallToolSchema, PressDigitsToolSchema]);

export const LlmConfigSchema = z.strictObject({
  base_url: z.url({ protocol: /^https?$/ }),
  model: z.string().min(1),
  api_key: writeOnlySecret().optional(),
  temperature: z.number().min(0).max(2).default(AGENT_DEFAULTS.temperature),
  max_tokens: z.int().positive().optional(),
  stream: z.boolean().default(true),
});

export const PronunciationSchema = z.strictObject({
  word: z.string().trim().min(1).max(100).describe('matched as a whole word, ignoring case'),
  replacement: z.string().trim().min(1).max(200).describe('what the voice says instead'),
});

export const VoiceConfigSchema = z.strictObject({
  engine: z.enum(['flite', 'espeak', 'openai']).default(AGENT_DEFAULTS.voiceEngine),
  voice_id: z.string().min(1).default(AGENT_DEFAULTS.voiceId),
  speed: z.number().min(0.5).max(2).default(1),
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  api_key: writeOnlySecret().optional(),
  /** Numbers, money, dates, times, phone numbers and e-mail addresses said as words (the transcript keeps the text); default on. */
  normalize_for_speech: z.boolean().optional(),
  pronunciation: z.array(PronunciationSchema).max(500).optional(),
});

const STT_ENGINES = ['pocketsphinx', 'moonshine', 'openai'] as const;
/** Moonshine's models (stt.model): tiny is the default; base reads more accurately at about twice the work. */
export const MOONSHINE_MODELS = ['tiny', 'base'] as const;

const sttFields = {
  language: z.string().min(2).default(AGENT_DEFAULTS.language),
  phrases: z.array(z.string().min(1).max(200)).max(500).optional(),
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  api_key: writeOnlySecret().optional(),
  model: z.string().min(1).optional().meta({ description: `The recogniser's model: for moonshine one of ${MOONSHINE_MODELS.join(', ')} (default tiny); for openai the server's model name.` }),
};

export const SttConfigSchema = z
  .strictObject({
    engine: z.enum(STT_ENGINES).optional().meta({ description: `Default ${AGENT_DEFAULTS.sttEngine}. Every engine takes phrases (names and terms to favour).` }),
    ...sttFields,
  })
  // The engine is stored as chosen, so a later change of default does not move existing agents.
  .transform((stt) => ({ ...stt, engine: stt.engine ?? AGENT_DEFAULTS.sttEngine }))
  // Spelled out again so the OpenAPI document shows the stored shape (a transform has none).
  .pipe(
    z.strictObject({ ...sttFields, engine: z.enum(STT_ENGINES), language: z.string().min(2) }).superRefine((stt, ctx) => {
      if (stt.engine === 'moonshine' && stt.model !== undefined && !(MOONSHINE_MODELS as readonly string[]).includes(stt.model)) {
        ctx.addIssue({ code: 'custom', path: ['model'], message: `moonshine has the models ${MOONSHINE_MODELS.join(' and ')}` });
      }
    }),
  );

export const AnalysisFieldSchema = z.strictObject({
  name: z.string().min(1).max(64),
  description: z.string().max(2000).default(''),
  type: z.enum(['string', 'number', 'boolean']).default('string'),
});

export const AnalysisConfigSchema = z.strictObject({
  summary_prompt: z.string().max(8000).optional(),
  custom_fields: z.array(AnalysisFieldSchema).max(50).default([]),
});

/** Every configurable field of an agent; all but agent_name and llm have defaults. */
export const AgentConfigSchema = z.strictObject({
  agent_name: z.string().min(1).max(200),
  llm: LlmConfigSchema,
  system_prompt: z.string().max(100_000).default(''),
  begin_message: z.string().max(10_000).default(''),
  voice: VoiceConfigSchema.default({ engine: AGENT_DEFAULTS.voiceEngine, voice_id: AGENT_DEFAULTS.voiceId, speed: 1 }),
  stt: SttConfigSchema.default({ engine: AGENT_DEFAULTS.sttEngine, language: AGENT_DEFAULTS.language }),
  tools: z
    .array(AgentToolSchema)
    .max(64)
    .default([])
    .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'tool names must be unique'),
  inactivity_timeout_ms: z.int().min(1_000).max(3_600_000).default(AGENT_DEFAULTS.inactivityTimeoutMs),
  /** Silence before each reminder, and after the last one before the call ends (inactivity); inactivity_timeout_ms when unset. */
  reminder_trigger_ms: z.int().min(1_000).max(3_600_000).optional(),
  /** Reminders in one stretch of silence (default 1); 0 ends the call after inactivity_timeout_ms of silence. */
  reminder_max_count: z.int().min(0).max(10).optional(),
  /** The reminder's words (default "Are you still there?"); with reminder_from_model, what is said if the model cannot answer. */
  reminder_message: z.string().trim().min(1).max(500).optional(),
  /** The model writes each reminder, told how long the caller has been silent. */
  reminder_from_model: z.boolean().optional(),
  max_duration_ms: z.int().min(10_000).max(4 * 3_600_000).default(AGENT_DEFAULTS.maxDurationMs),
  endpointing_ms: z.int().min(100).max(5_000).default(AGENT_DEFAULTS.endpointingMs),
  /**
   * How the end of the caller's turn is decided: `silence` waits endpointing_ms every time;
   * `semantic` also reads the words so far — min_ms after a finished sentence or question, max_ms
   * after an unfinished phrase, endpointing_ms when the words do not tell.
   */
  endpointing: z
    .strictObject({
      mode: z.enum(['semantic', 'silence']).default(AGENT_DEFAULTS.endpointingMode),
      min_ms: z.int().min(100).max(2_000).default(AGENT_DEFAULTS.endpointingMinMs),
      max_ms: z.int().min(300).max(5_000).default(AGENT_DEFAULTS.endpointingMaxMs),
    })
    .refine((e) => e.min_ms <= e.max_ms, 'min_ms must not exceed max_ms')
    .optional(),
  interruption_sensitivity: z.number().min(0).max(1).default(AGENT_DEFAULTS.interruptionSensitivity),
  /**
   * Noise suppression of the caller's audio before the VAD and the recogniser. Off by default:
   * measured on the phone path (bench:noise) RNNoise raised the recogniser's errors under music,
   * babble and a fan's steady noise alike, and cost ~4% of a core per call.
   */
  noise_suppression: z.enum(['off', 'rnnoise']).optional(),
  /** What a caller says only to acknowledge ("uh-huh", "okay", "right"): after one that stopped the agent, it goes on where it stopped. */
  backchannel_words: z.array(z.string().trim().min(1).max(40)).max(50).optional(),
  /** Keypad digits the caller presses become a turn of theirs: gathered until the terminator, max_digits, or a pause of timeout_ms. */
  dtmf: z
    .strictObject({
      enabled: z.boolean().default(true),
      terminator: z
        .string()
        .regex(/^[0-9*#]$/, 'one key: 0-9, * or #')
        .nullable()
        .default(AGENT_DEFAULTS.dtmfTerminator)
        .describe('the key that ends an entry; null: only max_digits or the pause do'),
      max_digits: z.int().min(1).max(64).nullable().default(null),
      timeout_ms: z.int().min(500).max(30_000).default(AGENT_DEFAULTS.dtmfTimeoutMs),
    })
    .optional(),
  inbound_numbers: z.array(E164).max(100).default([]),
  webhook_url: z.url({ protocol: /^https?$/ }).nullable().default(null),
  analysis: AnalysisConfigSchema.default({ custom_fields: [] }),
  voicemail_message: z.string().max(10_000).default(''),
  /** Older form of `voicemail`: true is `voicemail: {detect: true}` with voicemail_message as its message (none: hang up). */
  voicemail_detection: z.boolean().default(false),
  /**
   * Outbound calls: tell an answering machine from a person by the audio (a long greeting, its
   * words, its beep; a carrier's detection too), then hang up or leave `message` after the beep.
   */
  voicemail: z
    .strictObject({
      detect: z.boolean().default(true),
      action: z.enum(['hangup', 'leave_message']).default('leave_message'),
      message: z.string().trim().min(1).max(2_000).optional().describe('dynamic variables are filled in; voicemail_message when absent'),
      detect_timeout_ms: z.int().min(2_000).max(120_000).default(AGENT_DEFAULTS.voicemailDetectTimeoutMs),
    })
    .optional(),
  /** Calls of this agent keep no transcript, tool payloads or recording. */
  opt_out_sensitive_data_storage: z.boolean().default(false),
});

export type AgentConfig = z.infer<typeof AgentConfigSchema>;

/** An agent's secrets (API keys, tool headers): never in a response, sealed in the store. */
export const AGENT_SECRETS = new SecretFields(AgentConfigSchema);
/** Every URL an agent makes the service send requests to. */
export const AGENT_URL_FIELDS = urlFieldsOf(AgentConfigSchema);

/** How an agent's outbound calls treat an answering machine; null: they do not look for one. */
export interface VoicemailHandling {
  action: 'hangup' | 'leave_message';
  /** The words left after the beep; null: hang up. */
  message: string | null;
  detectTimeoutMs: number;
}

export function voicemailHandling(agent: Pick<AgentConfig, 'voicemail' | 'voicemail_detection' | 'voicemail_message'>): VoicemailHandling | null {
  const legacyMessage = agent.voicemail_message.trim() || null;
  if (agent.voicemail) {
    if (!agent.voicemail.detect) return null;
    const message = agent.voicemail.action === 'leave_message' ? (agent.voicemail.message ?? legacyMessage) : null;
    return { action: message ? 'leave_message' : 'hangup', message, detectTimeoutMs: agent.voicemail.detect_timeout_ms };
  }
  if (!agent.voicemail_detection) return null;
  return { action: legacyMessage ? 'leave_message' : 'hangup', message: legacyMessage, detectTimeoutMs: AGENT_DEFAULTS.voicemailDetectTimeoutMs };
}
export type AgentTool = z.infer<typeof AgentToolSchema>;
export type ApiTool = z.infer<typeof ApiToolSchema>;
export type LlmConfig = z.infer<typeof LlmConfigSchema>;

/**
 * PATCH body: any subset of the fields; nested objects replace as a whole. Defaults are
 * stripped, so a field the client leaves out keeps its stored value instead of being reset.
 */
export const AgentPatchSchema = z.strictObject(
  Object.fromEntries(
    Object.entries(AgentConfigSchema.shape).map(([key, field]) => [key, (field instanceof z.ZodDefault ? field.unwrap() : field).optional()]),
  ),
) as unknown as z.ZodType<Partial<AgentConfig>>;

/** A stored agent version as the runtime uses it (secrets included). */
export interface AgentVersion {
  agentId: string;
  orgId: string;
  version: number;
  isPublished: boolean;
  lastModified: number;
  config: AgentConfig;
}
