// Agent tests as the API takes and serves them: a test case (who calls, what must happen) and a
// run of several against one agent version, with each assertion's result.
import { z } from 'zod';
import { LlmConfigSchema } from '../agents/schema.ts';
import { urlFieldsOf } from '../schema-fields.ts';
import { SecretFields } from '../secrets/fields.ts';
import { DISCONNECTION_REASONS, TranscriptItemSchema } from '../records/record.ts';

/** The flite voices a scripted or simulated caller may speak with (the agent's default is slt). */
export const CALLER_VOICES = ['rms', 'awb', 'kal', 'slt'] as const;

export const AGENT_TEST_LIMITS = {
  steps: 100,
  sayChars: 1_000,
  maxTurns: 30,
  /** After its last step a caller stays on the line this long by default for the agent to finish and hang up. */
  afterLastStepMs: 15_000,
  runConcurrency: 4,
  testsPerRun: 100,
} as const;

const KEYS = /^[0-9*#A-D]+$/;

export const ScriptStepSchema = z.union([
  z.strictObject({
    say: z
      .string()
      .trim()
      .min(1)
      .max(AGENT_TEST_LIMITS.sayChars)
      .describe(
        "spoken by the caller's voice on the caller's turn: once the agent has spoken and finished, after a person's pause",
      ),
    barge_in_after_ms: z
      .int()
      .min(0)
      .max(60_000)
      .optional()
      .describe('speak this long after the agent starts its next turn, over it, instead of waiting for it to finish'),
  }),
  z.strictObject({ wait_ms: z.int().min(0).max(600_000).describe('silence on the line') }),
  z.strictObject({
    digits: z
      .string()
      .regex(KEYS, 'keypad keys: 0-9, *, #, A-D')
      .max(64)
      .describe("keys pressed on the caller's turn, one every 200 ms"),
  }),
  z.strictObject({ hangup: z.literal(true) }),
]);

export const ScriptCallerSchema = z.strictObject({
  script: z.array(ScriptStepSchema).min(1).max(AGENT_TEST_LIMITS.steps),
  voice: z.enum(CALLER_VOICES).default('rms').describe("the caller's flite voice"),
  after_last_step_ms: z
    .int()
    .min(0)
    .max(120_000)
    .default(AGENT_TEST_LIMITS.afterLastStepMs)
    .describe('after its last step (unless it hangs up) the caller stays on the line at most this long'),
});

export const PersonaCallerSchema = z.strictObject({
  persona: z.string().trim().min(1).max(4_000).describe('who the caller is'),
  goal: z.string().trim().min(1).max(4_000).describe('what the caller wants from the call'),
  max_turns: z
    .int()
    .min(1)
    .max(AGENT_TEST_LIMITS.maxTurns)
    .default(8)
    .describe('the caller hangs up after this many of its turns'),
  caller_llm: LlmConfigSchema.optional().describe(
    "the chat-completions model that plays the caller; the agent's own model server by default",
  ),
  voice: z.enum(CALLER_VOICES).default('rms'),
});

export const ReplayCallerSchema = z.strictObject({
  replay: z.strictObject({
    call_id: z.string().min(1).max(200).describe('a stored call of this organization with its recording'),
  }),
});

export const TestCallerSchema = z.union([ScriptCallerSchema, PersonaCallerSchema, ReplayCallerSchema]);

const validRegex = (source: string): boolean => {
  try {
    new RegExp(source, 'i');
    return true;
  } catch {
    return false;
  }
};

/** A string is looked for as text (any case); `regex` as a case-insensitive regular expression. */
export const TextMatchSchema = z.union([
  z.string().trim().min(1).max(1_000),
  z
    .strictObject({
      text: z.string().trim().min(1).max(1_000).optional(),
      regex: z.string().min(1).max(1_000).refine(validRegex, 'not a valid regular expression').optional(),
      role: z.enum(['agent', 'user']).optional().describe('only messages of this role; any by default'),
    })
    .refine((m) => (m.text === undefined) !== (m.regex === undefined), 'give one of text or regex'),
]);

export const ExpectedToolCallSchema = z.strictObject({
  name: z.string().min(1).max(64),
  arguments: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('the arguments the model must give: all of them (match exact) or at least these (match subset)'),
  match: z.enum(['exact', 'subset']).default('subset'),
});

export const JudgeSchema = z.strictObject({
  criteria: z
    .string()
    .trim()
    .min(1)
    .max(4_000)
    .describe('what the call must have done, in words; a model grades it pass or fail with a reason'),
  judge_llm: LlmConfigSchema.optional().describe("the agent's own model server by default"),
});

export const ExpectSchema = z.strictObject({
  tool_calls: z.array(ExpectedToolCallSchema).max(50).optional(),
  transcript_contains: z.array(TextMatchSchema).max(50).optional(),
  transcript_excludes: z.array(TextMatchSchema).max(50).optional(),
  disconnection_reason: z.enum(DISCONNECTION_REASONS).optional(),
  max_turns: z.int().min(1).max(1_000).optional().describe('the agent speaks at most this many times'),
  e2e_p95_ms: z.int().min(1).max(60_000).optional().describe("the call's voice-to-voice latency p95 at most this"),
  judge: JudgeSchema.optional(),
});

export const AgentTestInputSchema = z.strictObject({
  name: z.string().trim().min(1).max(200),
  caller: TestCallerSchema,
  expect: ExpectSchema.default({}),
  dynamic_variables: z.record(z.string(), z.string().max(10_000)).default({}).describe("the call's dynamic variables"),
});

export const AgentTestPatchSchema = z.strictObject({
  name: AgentTestInputSchema.shape.name.optional(),
  caller: TestCallerSchema.optional(),
  expect: ExpectSchema.optional(),
  dynamic_variables: z.record(z.string(), z.string().max(10_000)).optional(),
});

export const AgentTestSchema = z.object({
  test_id: z.string(),
  agent_id: z.string(),
  name: z.string(),
  caller: TestCallerSchema,
  expect: ExpectSchema,
  dynamic_variables: z.record(z.string(), z.string()),
  created_at: z.int().describe('Unix epoch ms'),
  updated_at: z.int().describe('Unix epoch ms'),
});

/** A test's secrets (its caller's and judge's model API keys): never in a response, sealed in the store. */
export const AGENT_TEST_SECRETS = new SecretFields(AgentTestSchema);
/** Every URL a test makes the service send requests to (its caller's and judge's models). */
export const AGENT_TEST_URL_FIELDS = urlFieldsOf(AgentTestInputSchema);

export const AssertionResultSchema = z.object({
  assertion: z.string().describe('what was checked, e.g. tool_calls[0] or disconnection_reason'),
  passed: z.boolean(),
  details: z.string(),
});

export const TEST_RESULT_STATUSES = ['pending', 'running', 'passed', 'failed', 'error'] as const;
export const RUN_STATUSES = ['running', 'passed', 'failed', 'error'] as const;

/** How a replayed call compares with the call it replays, turn by turn. */
export const OriginalComparisonSchema = z.object({
  call_id: z.string(),
  turns: z.array(
    z.object({
      turn: z.int(),
      role: z.enum(['agent', 'user']),
      original: z.string().nullable(),
      replay: z.string().nullable(),
      same: z.boolean(),
    }),
  ),
  same_turns: z.int(),
  total_turns: z.int(),
});

export const TestResultSchema = z.object({
  test_id: z.string(),
  name: z.string(),
  status: z.enum(TEST_RESULT_STATUSES),
  call_id: z.string().nullable(),
  assertions: z.array(AssertionResultSchema),
  /** Why the test could not run or finish (an error status), or why the caller's script failed. */
  error: z.string().nullable(),
  transcript_with_tool_calls: z.array(TranscriptItemSchema).nullable(),
  disconnection_reason: z.string().nullable(),
  latency_e2e_ms: z.object({ p50: z.number(), p95: z.number() }).nullable(),
  duration_ms: z.int().nullable().describe("the call's connected time"),
  original: OriginalComparisonSchema.nullable().describe('replays only: the stored call compared with its replay'),
});

export const TestRunSchema = z.object({
  run_id: z.string(),
  agent_id: z.string(),
  agent_version: z.int(),
  status: z
    .enum(RUN_STATUSES)
    .describe(
      'running until every test has a result; then passed (all passed), failed (any failed) or error (any could not run)',
    ),
  concurrency: z.int(),
  created_at: z.int(),
  ended_at: z.int().nullable(),
  results: z.array(TestResultSchema),
  summary: z.object({
    total: z.int(),
    passed: z.int(),
    failed: z.int(),
    errored: z.int(),
    wall_ms: z.int().nullable().describe('from the run starting to its last result'),
    audio_ms: z.int().describe("the tests' calls' connected time, summed"),
  }),
});

export type ScriptStep = z.infer<typeof ScriptStepSchema>;
export type TestCaller = z.infer<typeof TestCallerSchema>;
export type TextMatch = z.infer<typeof TextMatchSchema>;
export type Expect = z.infer<typeof ExpectSchema>;
export type AgentTestInput = z.infer<typeof AgentTestInputSchema>;
export type AgentTestPatch = z.infer<typeof AgentTestPatchSchema>;
export type AgentTest = z.infer<typeof AgentTestSchema>;
export type AssertionResult = z.infer<typeof AssertionResultSchema>;
export type TestResult = z.infer<typeof TestResultSchema>;
export type TestRun = z.infer<typeof TestRunSchema>;
export type OriginalComparison = z.infer<typeof OriginalComparisonSchema>;
