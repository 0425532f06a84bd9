import { describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { llmConfigsOf, sttConfigsOf, voiceConfigsOf } from '../../src/call/provider-chains.ts';

const agent = (fields: Record<string, unknown>) =>
  AgentConfigSchema.parse({ agent_name: 'a', llm: { base_url: 'https://m.example/v1', model: 'm' }, ...fields });

describe('provider chains', () => {
  it('end with an embedded recogniser and voice even when none is listed, with the agent’s language, phrases and pronunciations', () => {
    const a = agent({
      stt: {
        engine: 'openai',
        base_url: 'https://s.example/v1',
        phrases: ['Acme'],
        fallback: [{ engine: 'openai', base_url: 'https://t.example/v1' }],
      },
      voice: {
        engine: 'openai',
        base_url: 'https://v.example/v1',
        pronunciation: [{ word: 'Acme', replacement: 'ack me' }],
      },
    });
    expect(sttConfigsOf(a.stt).map((c) => [c.engine, c.base_url ?? null])).toEqual([
      ['openai', 'https://s.example/v1'],
      ['openai', 'https://t.example/v1'],
      ['pocketsphinx', null],
    ]);
    expect(sttConfigsOf(a.stt)[2]).toMatchObject({ language: 'en-US', phrases: ['Acme'] });
    expect(voiceConfigsOf(a.voice).map((c) => c.engine)).toEqual(['openai', 'flite']);
    expect(voiceConfigsOf(a.voice)[1]).toMatchObject({ pronunciation: [{ word: 'Acme', replacement: 'ack me' }] });
  });

  it('add nothing after an embedded engine, and no model after the listed ones', () => {
    const a = agent({
      stt: { engine: 'openai', base_url: 'https://s.example/v1', fallback: [{ engine: 'moonshine' }] },
      llm: {
        base_url: 'https://m.example/v1',
        model: 'm',
        fallback: [{ base_url: 'https://n.example/v1', model: 'n' }],
      },
    });
    expect(sttConfigsOf(a.stt).map((c) => c.engine)).toEqual(['openai', 'moonshine']);
    expect(voiceConfigsOf(a.voice).map((c) => c.engine)).toEqual(['flite']);
    expect(llmConfigsOf(a.llm).map((c) => c.model)).toEqual(['m', 'n']);
    expect(llmConfigsOf(a.llm)[0]).not.toHaveProperty('fallback');
  });
});
