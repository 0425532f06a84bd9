// An agent's configuration as clients send it and as the store keeps it (docs/contract.md, "Agents and secrets").
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

/** A provider credential of the organization, by name: its key (and address) win over the section's own. */
const credentialName = () =>
  z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      "the name of one of the organization's provider credentials (docs/providers/credentials.md); its api_key and base_url win over this section's",
    );

const toolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64');

export const ApiToolSchema = z
  .strictObject({
    type: z.literal('api'),
    name: toolName.describe('the name the model calls it by (letters, digits, _ and -)'),
    description: z.string().max(4000).default('').describe('what the tool does, for the model'),
    url: z
      .url({ protocol: /^https?$/ })
      .describe('where the call goes; the egress policy refuses private and reserved addresses'),
    method: z
      .enum(['GET', 'POST', 'PUT', 'DELETE'])
      .default('POST')
      .describe('GET and DELETE send the arguments as the query string, the others as a JSON body'),
    parameters: ToolParametersSchema.default({ type: 'object', properties: {} }).describe(
      "JSON Schema (type object) of the arguments; the model's arguments are checked against it",
    ),
    timeout: z
      .number()
      .positive()
      .max(AGENT_DEFAULTS.toolTimeoutMaxSeconds)
      .default(AGENT_DEFAULTS.toolTimeoutSeconds)
      .describe('seconds the call may take before the model is told it timed out'),
    headers: writeOnlyStringMap('sent with every call of the tool; write-only: never returned').optional(),
    speak_during_execution: z
      .boolean()
      .optional()
      .describe(
        'say execution_message as soon as the tool starts; without it, a tool slower than a second gets "One moment, please."',
      ),
    execution_message: z.string().trim().min(1).max(500).optional().describe('the line said while the tool runs'),
  })
  .describe('Calls an HTTP endpoint with the arguments the model chose; the reply (capped) goes back to the model.');

export const EndCallToolSchema = z
  .strictObject({
    type: z.literal('end_call'),
    name: toolName.default('end_call'),
    description: z
      .string()
      .max(4000)
      .default('End the call once the conversation is complete and you have said goodbye.'),
  })
  .describe('Lets the model hang up once its last words have played (disconnection_reason agent_hangup).');

export const TransferCallToolSchema = z
  .strictObject({
    type: z.literal('transfer_call'),
    name: toolName.default('transfer_call'),
    description: z.string().max(4000).default('Transfer the caller to a human at another number.'),
    transfer_to: E164.describe('the E.164 number the caller is put through to'),
    transfer_message: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .optional()
      .describe(
        "said before the caller is put through, after whatever the model said with the call; none: only the model's words",
      ),
    mode: z
      .enum(['cold', 'warm'])
      .default('cold')
      .describe(
        'cold: the caller is put through at once. warm: the caller hears hold music while the destination is called; whoever answers hears a summary of the call first, then both are bridged',
      ),
  })
  .describe(
    'Lets the model put the caller through to a person (disconnection_reason call_transfer once they are connected).',
  );

export const PressDigitsToolSchema = z
  .strictObject({
    type: z.literal('press_digits'),
    name: toolName.default('press_digits'),
    description: z
      .string()
      .max(4000)
      .default(
        'Press keys on the phone keypad, for example to choose an option in a phone menu. The other side hears the keypad tones.',
      ),
  })
  .describe('Lets the model press keypad keys (DTMF tones), e.g. in a phone menu on an outbound call.');

/** An MCP tool name as a server lists it (the model sees it made safe and unique: docs/mcp.md). */
const mcpToolName = z.string().min(1).max(128);

export const McpToolSchema = z
  .strictObject({
    type: z.literal('mcp'),
    url: z
      .url({ protocol: /^https?$/ })
      .describe(
        "the MCP server's endpoint (Streamable HTTP, or an older SSE one); the egress policy refuses private and reserved addresses",
      ),
    headers: writeOnlyStringMap(
      'sent with every request to the server (an authorization); write-only: never returned',
    ).optional(),
    allowed_tools: z
      .array(mcpToolName)
      .max(128)
      .optional()
      .describe("only these of the server's tools are offered to the model; all of them when absent"),
    timeout: z
      .number()
      .positive()
      .max(AGENT_DEFAULTS.toolTimeoutMaxSeconds)
      .default(AGENT_DEFAULTS.toolTimeoutSeconds)
      .describe('seconds one tool call may take before the model is told it timed out'),
  })
  .describe(
    "Offers the tools of an MCP server, listed when the call starts (cached for a minute), with the server's JSON schemas; results are capped like an HTTP tool's.",
  );

export const AgentToolSchema = z.discriminatedUnion('type', [
  ApiToolSchema,
  EndCallToolSchema,
  TransferCallToolSchema,
  PressDigitsToolSchema,
  McpToolSchema,
]);

export const LlmConfigSchema = z.strictObject({
  engine: z
    .enum(['chat-completions', 'openai-realtime', 'gemini-live'])
    .optional()
    .describe(
      'absent or chat-completions: a text model that `voice` speaks; openai-realtime, gemini-live: a speech-to-speech model over its WebSocket (docs/providers/openai-realtime.md, docs/providers/gemini-live.md)',
    ),
  base_url: z
    .url({ protocol: /^(https?|wss?)$/ })
    .describe(
      'an OpenAI-compatible chat-completions server (…/v1); for openai-realtime its WebSocket (wss://api.openai.com/v1/realtime), for gemini-live its BidiGenerateContent WebSocket; the egress policy applies',
    ),
  model: z.string().min(1).describe("the server's model name"),
  voice: z
    .string()
    .min(1)
    .optional()
    .describe(
      "openai-realtime, gemini-live: the model's own voice (alloy, marin…; Puck, Kore…); the server's default when absent",
    ),
  api_key: writeOnlySecret('sent as a bearer token; write-only: never returned').optional(),
  credential: credentialName(),
  turn_detection: z
    .enum(['service', 'model'])
    .optional()
    .describe(
      "openai-realtime, gemini-live: who ends the caller's turn; service (default): the service's VAD and end-of-turn policy; model: the model's own turn detection (docs/providers/openai-realtime.md)",
    ),
  temperature: z
    .number()
    .min(0)
    .max(2)
    .default(AGENT_DEFAULTS.temperature)
    .describe('sampling temperature; lower is more predictable'),
  max_tokens: z.int().positive().optional().describe("the longest reply in tokens; the server's own limit when absent"),
  stream: z.boolean().default(true).describe('stream tokens (SSE) so the voice starts on the first sentence'),
});

export const PronunciationSchema = z.strictObject({
  word: z.string().trim().min(1).max(100).describe('matched as a whole word, ignoring case'),
  replacement: z.string().trim().min(1).max(200).describe('what the voice says instead'),
});

const VoiceFieldsSchema = z.strictObject({
  engine: z
    .enum(['flite', 'espeak', 'openai', 'elevenlabs', 'cartesia', 'deepgram'])
    .default(AGENT_DEFAULTS.voiceEngine)
    .describe(
      'flite and espeak are embedded; openai is an OpenAI-compatible /audio/speech server; elevenlabs, cartesia and deepgram (Aura) are streaming voices, one WebSocket per call',
    ),
  voice_id: z
    .string()
    .min(1)
    .default(AGENT_DEFAULTS.voiceId)
    .describe("the engine's voice (flite: slt, rms, awb, kal…; espeak: a voice name)"),
  speed: z.number().min(0.5).max(2).default(1).describe("1 is the voice's own pace"),
  base_url: z
    .url({ protocol: /^(https?|wss?)$/ })
    .optional()
    .describe("the openai engine's server (http/https); a streaming voice's provider (wss, ws for a stand-in)"),
  api_key: writeOnlySecret("the engine's key (openai or a streaming voice's); write-only: never returned").optional(),
  model: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("a streaming voice's model (deepgram: the Aura voice, e.g. aura-2-thalia-en); the provider's default"),
  credential: credentialName(),
  normalize_for_speech: z
    .boolean()
    .optional()
    .describe(
      'numbers, money, dates, times, phone numbers and e-mail addresses said as words (the transcript keeps the text); default on',
    ),
  pronunciation: z.array(PronunciationSchema).max(500).optional().describe('words the voice says differently'),
});

export const VoiceConfigSchema = VoiceFieldsSchema.superRefine((voice, ctx) => {
  // A streaming voice's provider is a WebSocket; an OpenAI-compatible server is spoken to over HTTP.
  if (voice.base_url === undefined || voice.engine === 'flite' || voice.engine === 'espeak') return;
  const socket = /^wss?:/i.test(voice.base_url);
  if (socket !== (voice.engine !== 'openai'))
    ctx.addIssue({
      code: 'custom',
      path: ['base_url'],
      message: `the ${voice.engine} engine takes ${voice.engine === 'openai' ? 'an http(s)' : 'a ws(s)'} URL`,
    });
});

const STT_ENGINES = ['pocketsphinx', 'moonshine', 'openai', 'deepgram', 'assemblyai'] as const;
/** Recognisers reached over a WebSocket: their base_url is ws:// or wss://. */
const STREAMING_STT_ENGINES: readonly string[] = ['deepgram', 'assemblyai'];
/** Moonshine's models (stt.model): tiny is the default; base reads more accurately at about twice the work. */
export const MOONSHINE_MODELS = ['tiny', 'base'] as const;

const sttFields = {
  language: z.string().min(2).default(AGENT_DEFAULTS.language).describe('BCP 47 language of the caller'),
  phrases: z.array(z.string().min(1).max(200)).max(500).optional().describe('names and terms the recogniser favours'),
  base_url: z
    .url({ protocol: /^(https?|wss?)$/ })
    .optional()
    .describe(
      "the openai engine's server (/audio/transcriptions, http or https); deepgram's or assemblyai's (ws or wss; their own by default)",
    ),
  api_key: writeOnlySecret("the openai, deepgram or assemblyai engine's key; write-only: never returned").optional(),
  credential: credentialName(),
  model: z
    .string()
    .min(1)
    .optional()
    .meta({
      description: `The recogniser's model: for moonshine one of ${MOONSHINE_MODELS.join(', ')} (default tiny); for openai the server's model name; for deepgram its model (default nova-3); for assemblyai its speech_model.`,
    }),
};

export const SttConfigSchema = z
  .strictObject({
    engine: z
      .enum(STT_ENGINES)
      .optional()
      .meta({
        description: `Default ${AGENT_DEFAULTS.sttEngine}. Every engine takes phrases (names and terms to favour).`,
      }),
    ...sttFields,
  })
  // The engine is stored as chosen, so a later change of default does not move existing agents.
  .transform((stt) => ({ ...stt, engine: stt.engine ?? AGENT_DEFAULTS.sttEngine }))
  // Spelled out again so the OpenAPI document shows the stored shape (a transform has none).
  .pipe(
    z
      .strictObject({ ...sttFields, engine: z.enum(STT_ENGINES), language: z.string().min(2) })
      .superRefine((stt, ctx) => {
        if (
          stt.engine === 'moonshine' &&
          stt.model !== undefined &&
          !(MOONSHINE_MODELS as readonly string[]).includes(stt.model)
        ) {
          ctx.addIssue({
            code: 'custom',
            path: ['model'],
            message: `moonshine has the models ${MOONSHINE_MODELS.join(' and ')}`,
          });
        }
        // A streaming recogniser is a WebSocket, an HTTP one a request: each takes only its own kind of address.
        if (stt.base_url !== undefined) {
          const streaming = STREAMING_STT_ENGINES.includes(stt.engine);
          if (streaming !== /^wss?:/i.test(stt.base_url))
            ctx.addIssue({
              code: 'custom',
              path: ['base_url'],
              message: streaming
                ? `${stt.engine} takes a ws:// or wss:// base_url`
                : 'takes an http:// or https:// base_url',
            });
        }
      }),
  );

/** Providers an agent may list after its own in stt, voice and llm (docs/fallbacks.md). */
export const MAX_FALLBACKS = 3;

/**
 * A section's `fallback`: whole configurations of the same section, without a fallback of their own, tried in order
 * once the one before fails; the call then stays on it.
 */
function fallbacksOf<T extends z.ZodType>(entry: T, what: string) {
  return z
    .array(entry)
    .min(1)
    .max(MAX_FALLBACKS)
    .optional()
    .describe(
      `${what} tried in order when the one before fails to connect, misses its first-result deadline or errors; each takes the same fields as this section (no fallback of its own); the call stays on the one it moved to (docs/fallbacks.md)`,
    );
}

/**
 * The agent's stt section: one recogniser's settings and the ones tried after it. Built on SttConfigSchema's own
 * input object, transform (which spreads its input, so the list passes through) and stored shape.
 */
const SttSectionSchema = SttConfigSchema.in.in
  .extend({ fallback: fallbacksOf(SttConfigSchema, 'recognisers') })
  .pipe(SttConfigSchema.in.out)
  .pipe(SttConfigSchema.out.extend({ fallback: fallbacksOf(SttConfigSchema.out, 'recognisers') }));

export const AnalysisFieldSchema = z.strictObject({
  name: z.string().min(1).max(64).describe("the key in the record's call_analysis.custom_analysis_data"),
  description: z.string().max(2000).default('').describe('what the model should extract'),
  type: z.enum(['string', 'number', 'boolean']).default('string'),
});

export const AnalysisConfigSchema = z.strictObject({
  summary_prompt: z.string().max(8000).optional().describe("how the model is asked for the call's summary"),
  custom_fields: z
    .array(AnalysisFieldSchema)
    .max(50)
    .default([])
    .describe('values the model extracts from the transcript after the call'),
});

/** Every configurable field of an agent; all but agent_name and llm have defaults. */
export const AgentConfigSchema = z.strictObject({
  agent_name: z.string().min(1).max(200).describe('a name for people; calls and lists show it'),
  llm: LlmConfigSchema.extend({ fallback: fallbacksOf(LlmConfigSchema, 'models') })
    .refine(
      (llm) => /^wss?:/.test(llm.base_url) === (llm.engine === 'openai-realtime' || llm.engine === 'gemini-live'),
      {
        message: 'base_url is ws(s) for a speech-to-speech engine and http(s) otherwise',
        path: ['base_url'],
      },
    )
    .refine(
      (llm) => llm.turn_detection !== 'model' || llm.engine === 'openai-realtime' || llm.engine === 'gemini-live',
      {
        message: 'turn_detection "model" needs a speech-to-speech engine (openai-realtime, gemini-live)',
        path: ['turn_detection'],
      },
    )
    .describe('the language model that writes the replies, or a speech-to-speech model that also speaks them'),
  system_prompt: z
    .string()
    .max(100_000)
    .default('')
    .describe("what the model is told first; {{name}} is filled from the call's dynamic variables"),
  begin_message: z
    .string()
    .max(10_000)
    .default('')
    .describe('what the agent says first (dynamic variables filled in); empty: it waits for the caller'),
  voice: VoiceConfigSchema.extend({ fallback: fallbacksOf(VoiceConfigSchema, 'voices') })
    .default({
      engine: AGENT_DEFAULTS.voiceEngine,
      voice_id: AGENT_DEFAULTS.voiceId,
      speed: 1,
    })
    .describe('how the agent speaks'),
  stt: SttSectionSchema.default({ engine: AGENT_DEFAULTS.sttEngine, language: AGENT_DEFAULTS.language }).describe(
    `how the caller is heard; default {"engine": "${AGENT_DEFAULTS.sttEngine}", "language": "${AGENT_DEFAULTS.language}"}`,
  ),
  tools: z
    .array(AgentToolSchema)
    .max(64)
    .default([])
    .refine((tools) => {
      const names = tools.flatMap((t) => ('name' in t ? [t.name] : []));
      return new Set(names).size === names.length;
    }, 'tool names must be unique')
    .describe('what the model may do besides talking; names unique (see Tools below)'),
  inactivity_timeout_ms: z
    .int()
    .min(1_000)
    .max(3_600_000)
    .default(AGENT_DEFAULTS.inactivityTimeoutMs)
    .describe('silence from the caller after which the call ends (inactivity), reminders included'),
  reminder_trigger_ms: z
    .int()
    .min(1_000)
    .max(3_600_000)
    .optional()
    .describe(
      'silence before each reminder, and after the last one before the call ends (inactivity); inactivity_timeout_ms when unset',
    ),
  reminder_max_count: z
    .int()
    .min(0)
    .max(10)
    .optional()
    .describe(
      'reminders in one stretch of silence (default 1); 0 ends the call after inactivity_timeout_ms of silence',
    ),
  reminder_message: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .optional()
    .describe(
      'the reminder\'s words (default "Are you still there?"); with reminder_from_model, what is said if the model cannot answer',
    ),
  reminder_from_model: z
    .boolean()
    .optional()
    .describe('the model writes each reminder, told how long the caller has been silent'),
  max_duration_ms: z
    .int()
    .min(10_000)
    .max(4 * 3_600_000)
    .default(AGENT_DEFAULTS.maxDurationMs)
    .describe('the longest a call may last (max_duration_reached)'),
  endpointing_ms: z
    .int()
    .min(100)
    .max(5_000)
    .default(AGENT_DEFAULTS.endpointingMs)
    .describe(
      "silence that ends the caller's turn in silence mode; in semantic mode, the wait when the words do not tell",
    ),
  endpointing: z
    .strictObject({
      mode: z
        .enum(['semantic', 'silence'])
        .default(AGENT_DEFAULTS.endpointingMode)
        .describe('semantic reads the words so far; silence only waits'),
      min_ms: z
        .int()
        .min(100)
        .max(2_000)
        .default(AGENT_DEFAULTS.endpointingMinMs)
        .describe('the wait after a finished sentence or question'),
      max_ms: z
        .int()
        .min(300)
        .max(5_000)
        .default(AGENT_DEFAULTS.endpointingMaxMs)
        .describe('the wait after an unfinished phrase'),
    })
    .refine((e) => e.min_ms <= e.max_ms, 'min_ms must not exceed max_ms')
    .optional()
    .describe(
      "how the end of the caller's turn is decided: silence waits endpointing_ms every time; semantic also reads the words so far (the default when absent)",
    ),
  interruption_sensitivity: z
    .number()
    .min(0)
    .max(1)
    .default(AGENT_DEFAULTS.interruptionSensitivity)
    .describe(
      "how readily the caller's speech stops the agent: the speech it takes is 1000 ms at 0, 200 ms at 1 (600 ms at the default); speech begun within 2 s of the agent taking the turn (the caller going on) takes 200 ms at any setting",
    ),
  noise_suppression: z
    .enum(['off', 'rnnoise'])
    .optional()
    .describe(
      "noise suppression of the caller's audio before the VAD and the recogniser; off by default: on the phone path RNNoise raised the recogniser's errors (docs/performance.md)",
    ),
  backchannel_words: z
    .array(z.string().trim().min(1).max(40))
    .max(50)
    .optional()
    .describe(
      'what a caller says only to acknowledge ("uh-huh", "okay", "right"): after one that stopped the agent, it goes on where it stopped',
    ),
  dtmf: z
    .strictObject({
      enabled: z.boolean().default(true).describe('false: keypad digits are ignored'),
      terminator: z
        .string()
        .regex(/^[0-9*#]$/, 'one key: 0-9, * or #')
        .nullable()
        .default(AGENT_DEFAULTS.dtmfTerminator)
        .describe('the key that ends an entry; null: only max_digits or the pause do'),
      max_digits: z.int().min(1).max(64).nullable().default(null).describe('an entry ends at this many digits'),
      timeout_ms: z
        .int()
        .min(500)
        .max(30_000)
        .default(AGENT_DEFAULTS.dtmfTimeoutMs)
        .describe('an entry ends after this pause'),
    })
    .optional()
    .describe(
      'keypad digits the caller presses become a turn of theirs: gathered until the terminator, max_digits, or a pause of timeout_ms',
    ),
  inbound_numbers: z
    .array(E164)
    .max(100)
    .default([])
    .describe('E.164 numbers whose inbound calls this agent answers; a number belongs to one organization'),
  webhook_url: z
    .url({ protocol: /^https?$/ })
    .nullable()
    .default(null)
    .describe("where this agent's call events are posted; the organization's webhook when null"),
  analysis: AnalysisConfigSchema.default({ custom_fields: [] }).describe(
    'what is worked out from the transcript after each call',
  ),
  voicemail_message: z.string().max(10_000).default('').describe('older form of voicemail.message'),
  voicemail_detection: z
    .boolean()
    .default(false)
    .describe(
      'older form of voicemail: true is voicemail: {detect: true} with voicemail_message as its message (none: hang up)',
    ),
  voicemail: z
    .strictObject({
      detect: z.boolean().default(true).describe('false: outbound calls do not look for a machine'),
      action: z
        .enum(['hangup', 'leave_message'])
        .default('leave_message')
        .describe('what happens on a machine (leave_message without any message hangs up)'),
      message: z
        .string()
        .trim()
        .min(1)
        .max(2_000)
        .optional()
        .describe('dynamic variables are filled in; voicemail_message when absent'),
      detect_timeout_ms: z
        .int()
        .min(2_000)
        .max(120_000)
        .default(AGENT_DEFAULTS.voicemailDetectTimeoutMs)
        .describe('the longest the audio is listened to before the call is taken for a person'),
    })
    .optional()
    .describe(
      "outbound calls: tell an answering machine from a person by the audio (a long greeting, its words, its beep; a carrier's detection too), then hang up or leave message after the beep",
    ),
  opt_out_sensitive_data_storage: z
    .boolean()
    .default(false)
    .describe('calls of this agent keep no transcript, tool payloads or recording'),
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

export function voicemailHandling(
  agent: Pick<AgentConfig, 'voicemail' | 'voicemail_detection' | 'voicemail_message'>,
): VoicemailHandling | null {
  const legacyMessage = agent.voicemail_message.trim() || null;
  if (agent.voicemail) {
    if (!agent.voicemail.detect) return null;
    const message = agent.voicemail.action === 'leave_message' ? (agent.voicemail.message ?? legacyMessage) : null;
    return {
      action: message ? 'leave_message' : 'hangup',
      message,
      detectTimeoutMs: agent.voicemail.detect_timeout_ms,
    };
  }
  if (!agent.voicemail_detection) return null;
  return {
    action: legacyMessage ? 'leave_message' : 'hangup',
    message: legacyMessage,
    detectTimeoutMs: AGENT_DEFAULTS.voicemailDetectTimeoutMs,
  };
}
export type AgentTool = z.infer<typeof AgentToolSchema>;
export type ApiTool = z.infer<typeof ApiToolSchema>;
export type McpTool = z.infer<typeof McpToolSchema>;
export type LlmConfig = z.infer<typeof LlmConfigSchema>;

/**
 * PATCH body: any subset of the fields; nested objects replace as a whole. Defaults are
 * stripped, so a field the client leaves out keeps its stored value instead of being reset.
 */
export const AgentPatchSchema = z.strictObject(
  Object.fromEntries(
    Object.entries(AgentConfigSchema.shape).map(([key, field]) => [
      key,
      (field instanceof z.ZodDefault ? field.unwrap() : field).optional(),
    ]),
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
