// The manual keeps up with the code: every environment variable the service reads is documented,
// and README starts with the two commands a newcomer needs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentReference } from '../scripts/agent-reference.ts';
import { ConfigSchema } from '../src/config.ts';

const root = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

describe('documentation', () => {
  it('documents every environment variable the service reads in docs/configuration.md', () => {
    const documented = read('docs/configuration.md');
    const missing = Object.keys(ConfigSchema.shape).filter((name) => !documented.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('README shows npm start and npm test first, and every docs/ page it names exists', () => {
    const readme = read('README.md');
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(
      firstBlock
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('#')[0]!.trim()),
    ).toEqual(['npm start', 'npm test']);
    for (const [, page] of readme.matchAll(/`(docs\/[\w-]+\.md)`/g)) expect(() => read(page!), page).not.toThrow();
  });

  it('docs/agent.md is the reference the agent schema generates (npm run docs:agent)', () => {
    expect(read('docs/agent.md')).toBe(agentReference());
  });
});
