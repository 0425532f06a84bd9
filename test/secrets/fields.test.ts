import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AGENT_TEST_SECRETS } from '../../src/agent-tests/schema.ts';
import { AGENT_SECRETS } from '../../src/agents/schema.ts';
import { SecretFields, writeOnlySecret, writeOnlyStringMap } from '../../src/secrets/fields.ts';
import { SecretBox } from '../../src/secrets/sealed.ts';

const box = new SecretBox(Buffer.alloc(32, 3));

describe('write-only secret fields', () => {
  it('finds every field marked write-only in a schema, through optionals, arrays, records and unions', () => {
    const schema = z.object({
      key: writeOnlySecret().optional(),
      items: z.array(
        z.union([
          z.object({ kind: z.literal('a'), headers: writeOnlyStringMap() }),
          z.object({ kind: z.literal('b') }),
        ]),
      ),
      nested: z.object({ deep: z.object({ token: writeOnlySecret() }) }).optional(),
      plain: z.string(),
    });
    expect(new SecretFields(schema).paths).toEqual([['key'], ['items', '*', 'headers'], ['nested', 'deep', 'token']]);
  });

  it("marks every secret an agent or an agent test takes: model, voice and recogniser keys (and their fallbacks'), HTTP and MCP tools' headers, the caller's and judge's keys", () => {
    expect(AGENT_SECRETS.paths).toEqual([
      ['llm', 'api_key'],
      ['llm', 'fallback', '*', 'api_key'],
      ['voice', 'api_key'],
      ['voice', 'fallback', '*', 'api_key'],
      ['stt', 'api_key'],
      ['stt', 'fallback', '*', 'api_key'],
      ['tools', '*', 'headers'],
    ]);
    expect(AGENT_TEST_SECRETS.paths).toEqual([
      ['caller', 'caller_llm', 'api_key'],
      ['expect', 'judge', 'judge_llm', 'api_key'],
    ]);
  });

  it('hides, seals and opens a document without changing the one given', () => {
    const doc = {
      llm: { api_key: 'sk-1', model: 'm' },
      voice: {},
      stt: {},
      tools: [{ type: 'api', headers: { 'x-key': 'h-1' } }, { type: 'end_call' }],
    };
    const before = structuredClone(doc);
    expect(AGENT_SECRETS.hide(doc)).toEqual({
      llm: { model: 'm' },
      voice: {},
      stt: {},
      tools: [{ type: 'api' }, { type: 'end_call' }],
    });
    const sealed = AGENT_SECRETS.seal(doc, box);
    expect(JSON.stringify(sealed)).not.toMatch(/sk-1|h-1/);
    expect(AGENT_SECRETS.hasPlaintext(sealed)).toBe(false);
    expect(AGENT_SECRETS.hasPlaintext(doc)).toBe(true);
    expect(AGENT_SECRETS.seal(sealed, box)).toEqual(sealed);
    expect(AGENT_SECRETS.open(sealed, box)).toEqual(doc);
    expect(doc).toEqual(before);
  });

  it('refuses a secret that looks sealed, so a stored value is never taken for one the client sent', () => {
    expect(writeOnlySecret().safeParse(box.seal('x')).success).toBe(false);
    expect(writeOnlyStringMap().safeParse({ a: box.seal('x') }).success).toBe(false);
  });
});
