import { describe, expect, it } from 'vitest';
import {
  AGENT_SECRETS,
  AGENT_URL_FIELDS,
  AgentConfigSchema,
  MAX_FALLBACKS,
  MOONSHINE_MODELS,
} from '../../src/agents/schema.ts';
import { MOONSHINE_SIZE_NAMES } from '../../src/speech/stt/moonshine/recogniser.ts';

const minimal = { agent_name: 'Front desk', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'demo' } };

describe('agent configuration', () => {
  it('fills every default from one place', () => {
    const agent = AgentConfigSchema.parse(minimal);
    expect(agent.llm.temperature).toBe(1);
    expect(agent.endpointing_ms).toBe(500);
    expect(agent.inactivity_timeout_ms).toBe(30_000);
    expect(agent.max_duration_ms).toBe(3_600_000);
    expect(agent.begin_message).toBe('');
    expect(agent.tools).toEqual([]);
  });

  it('defaults an API tool to POST with a 10 s timeout and rejects a timeout over 120 s', () => {
    const agent = AgentConfigSchema.parse({
      ...minimal,
      tools: [{ type: 'api', name: 'book', url: 'http://127.0.0.1:9/book' }],
    });
    expect(agent.tools[0]).toMatchObject({ method: 'POST', timeout: 10 });
    const bad = AgentConfigSchema.safeParse({
      ...minimal,
      tools: [{ type: 'api', name: 'book', url: 'http://127.0.0.1:9/book', timeout: 121 }],
    });
    expect(bad.success).toBe(false);
  });

  it('rejects a temperature outside 0 to 2 and duplicate tool names', () => {
    expect(AgentConfigSchema.safeParse({ ...minimal, llm: { ...minimal.llm, temperature: 2.1 } }).success).toBe(false);
    const dup = [{ type: 'end_call' }, { type: 'end_call' }];
    expect(AgentConfigSchema.safeParse({ ...minimal, tools: dup }).success).toBe(false);
  });

  it('stt: every engine takes phrase hints, moonshine included', () => {
    expect(AgentConfigSchema.parse({ ...minimal, stt: { engine: 'moonshine', phrases: ['billing'] } }).stt).toEqual({
      engine: 'moonshine',
      language: 'en-US',
      phrases: ['billing'],
    });
    expect(
      AgentConfigSchema.safeParse({ ...minimal, stt: { engine: 'pocketsphinx', phrases: ['billing'] } }).success,
    ).toBe(true);
    const tooLong = AgentConfigSchema.safeParse({ ...minimal, stt: { phrases: ['x'.repeat(201)] } });
    expect(tooLong.error?.issues[0]?.path).toEqual(['stt', 'phrases', 0]);
  });

  it('stt engine by default: moonshine, with or without phrase hints; an engine given is kept', () => {
    expect(AgentConfigSchema.parse(minimal).stt).toEqual({ engine: 'moonshine', language: 'en-US' });
    expect(AgentConfigSchema.parse({ ...minimal, stt: {} }).stt.engine).toBe('moonshine');
    expect(AgentConfigSchema.parse({ ...minimal, stt: { phrases: ['billing'] } }).stt).toEqual({
      engine: 'moonshine',
      language: 'en-US',
      phrases: ['billing'],
    });
    expect(AgentConfigSchema.parse({ ...minimal, stt: { phrases: [] } }).stt.engine).toBe('moonshine');
    expect(AgentConfigSchema.parse({ ...minimal, stt: { engine: 'pocketsphinx' } }).stt.engine).toBe('pocketsphinx');
    expect(AgentConfigSchema.parse({ ...minimal, stt: { engine: 'openai', phrases: ['billing'] } }).stt.engine).toBe(
      'openai',
    );
  });

  it('stt.model: moonshine takes tiny or base and refuses any other name at stt.model; other engines keep their own names', () => {
    expect(AgentConfigSchema.parse({ ...minimal, stt: { model: 'base' } }).stt).toEqual({
      engine: 'moonshine',
      language: 'en-US',
      model: 'base',
    });
    expect(AgentConfigSchema.parse({ ...minimal, stt: { engine: 'moonshine', model: 'tiny' } }).stt.model).toBe('tiny');
    const unknown = AgentConfigSchema.safeParse({ ...minimal, stt: { engine: 'moonshine', model: 'large' } });
    expect(unknown.error?.issues[0]?.path).toEqual(['stt', 'model']);
    expect(unknown.error?.issues[0]?.message).toContain('tiny and base');
    expect(
      AgentConfigSchema.parse({
        ...minimal,
        stt: { engine: 'openai', base_url: 'http://127.0.0.1:9/v1', model: 'whisper-1' },
      }).stt.model,
    ).toBe('whisper-1');
    // The schema names the models the recogniser has (it does not import the speech room).
    expect([...MOONSHINE_MODELS]).toEqual(MOONSHINE_SIZE_NAMES);
  });
});

describe('fallback lists', () => {
  it('take whole configs of their section, defaults filled as for the section itself', () => {
    const agent = AgentConfigSchema.parse({
      ...minimal,
      llm: { ...minimal.llm, fallback: [{ base_url: 'http://127.0.0.1:8/v1', model: 'backup' }] },
      stt: { engine: 'openai', base_url: 'http://127.0.0.1:7/v1', fallback: [{}, { engine: 'pocketsphinx' }] },
      voice: { engine: 'openai', base_url: 'http://127.0.0.1:6/v1', fallback: [{ engine: 'espeak' }] },
    });
    expect(agent.llm.fallback).toEqual([
      { base_url: 'http://127.0.0.1:8/v1', model: 'backup', temperature: 1, stream: true },
    ]);
    expect(agent.stt.fallback).toEqual([
      { engine: 'moonshine', language: 'en-US' },
      { engine: 'pocketsphinx', language: 'en-US' },
    ]);
    expect(agent.voice.fallback).toEqual([{ engine: 'espeak', voice_id: 'slt', speed: 1 }]);
  });

  it('refuse a fallback of a fallback, an empty list, more than the limit, and an entry its section would refuse', () => {
    const issues = (fields: Record<string, unknown>) => {
      const parsed = AgentConfigSchema.safeParse({ ...minimal, ...fields });
      return parsed.success ? [] : parsed.error.issues.map((i) => i.path.join('.'));
    };
    expect(issues({ stt: { fallback: [{ fallback: [{}] }] } })).toEqual(['stt.fallback.0']);
    expect(issues({ voice: { fallback: [] } })).toEqual(['voice.fallback']);
    expect(issues({ voice: { fallback: Array.from({ length: MAX_FALLBACKS + 1 }, () => ({})) } })).toEqual([
      'voice.fallback',
    ]);
    expect(issues({ stt: { fallback: [{ engine: 'moonshine', model: 'huge' }] } })).toEqual(['stt.fallback.0.model']);
    expect(issues({ llm: { ...minimal.llm, fallback: [{ model: 'no-url' }] } })).toEqual(['llm.fallback.0.base_url']);
  });

  it('keep their keys write-only and their addresses under the egress check, as the section’s own', () => {
    const paths = (list: readonly (readonly string[])[]) => list.map((p) => p.join('.'));
    expect(paths(AGENT_SECRETS.paths)).toEqual(
      expect.arrayContaining(['llm.fallback.*.api_key', 'stt.fallback.*.api_key', 'voice.fallback.*.api_key']),
    );
    expect(paths(AGENT_URL_FIELDS)).toEqual(
      expect.arrayContaining(['llm.fallback.*.base_url', 'stt.fallback.*.base_url', 'voice.fallback.*.base_url']),
    );
  });
});

describe('llm.engine', () => {
  const realtime = { engine: 'openai-realtime', base_url: 'wss://api.openai.com/v1/realtime', model: 'gpt-realtime' };

  it('a speech-to-speech model takes a ws(s) address and a chat-completions model an http(s) one, never the other way round', () => {
    const agent = AgentConfigSchema.parse({ ...minimal, llm: { ...realtime, voice: 'marin' } });
    expect(agent.llm).toMatchObject({ engine: 'openai-realtime', voice: 'marin' });
    expect(
      AgentConfigSchema.safeParse({ ...minimal, llm: { ...realtime, base_url: 'ws://127.0.0.1:9000/v1/realtime' } })
        .success,
    ).toBe(true);
    expect(
      AgentConfigSchema.safeParse({ ...minimal, llm: { ...realtime, base_url: 'https://api.openai.com/v1' } }).success,
    ).toBe(false);
    expect(
      AgentConfigSchema.safeParse({ ...minimal, llm: { ...minimal.llm, base_url: 'wss://api.openai.com/v1' } }).success,
    ).toBe(false);
    const gemini = {
      engine: 'gemini-live',
      base_url:
        'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent',
      model: 'gemini-live-2.5-flash-preview',
    };
    expect(AgentConfigSchema.safeParse({ ...minimal, llm: gemini }).success).toBe(true);
    expect(
      AgentConfigSchema.safeParse({
        ...minimal,
        llm: { ...gemini, base_url: 'https://generativelanguage.googleapis.com/v1beta' },
      }).success,
    ).toBe(false);
    expect(AgentConfigSchema.safeParse({ ...minimal, llm: { ...realtime, engine: 'gemini-pro' } }).success).toBe(false);
  });

  it('turn_detection "model" is taken by a speech-to-speech engine and refused, with its path, by a chat-completions one', () => {
    expect(AgentConfigSchema.parse({ ...minimal, llm: { ...realtime, turn_detection: 'model' } }).llm).toMatchObject({
      turn_detection: 'model',
    });
    expect(AgentConfigSchema.parse({ ...minimal, llm: realtime }).llm.turn_detection).toBeUndefined();
    const refused = AgentConfigSchema.safeParse({ ...minimal, llm: { ...minimal.llm, turn_detection: 'model' } });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]).toMatchObject({
      path: ['llm', 'turn_detection'],
      message: expect.stringContaining('speech-to-speech'),
    });
    expect(AgentConfigSchema.safeParse({ ...minimal, llm: { ...realtime, turn_detection: 'vad' } }).success).toBe(
      false,
    );
  });
});
