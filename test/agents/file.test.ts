import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentsFileError, parseAgentsFile, readAgentsFile } from '../../src/agents/file.ts';
import { AgentService } from '../../src/agents/service.ts';
import { SqliteAgentRepository } from '../../src/store/agents.ts';
import { promised } from '../../src/store/promised.ts';
import { openDatabase } from '../../src/store/database.ts';
import { testSecretBox } from '../helpers/secrets.ts';

const entry = { agent_id: 'desk', agent_name: 'Desk', llm: { base_url: '{{PUBLIC_URL}}/demo/llm/v1', model: 'demo' } };

describe('agents file', () => {
  it('fills {{PUBLIC_URL}} and accepts one agent or an array', () => {
    const [one] = parseAgentsFile(JSON.stringify(entry), 'https://calls.example.com');
    expect(one!.config.llm.base_url).toBe('https://calls.example.com/demo/llm/v1');
    expect(
      parseAgentsFile(JSON.stringify([entry, { ...entry, agent_id: 'two' }]), 'http://x').map((e) => e.agentId),
    ).toEqual(['desk', 'two']);
  });

  it('explains what is wrong with a bad file', () => {
    expect(() => parseAgentsFile('{', 'http://x')).toThrow(AgentsFileError);
    expect(() => parseAgentsFile(JSON.stringify({ ...entry, agent_id: 'bad id' }), 'http://x')).toThrow(
      /\[0\]\.agent_id/,
    );
    expect(() => readAgentsFile('/nonexistent/agents.json', 'http://x')).toThrow(/cannot read/);
  });

  it('adds no version on a restart with the same file, and a published one when the file changed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agents-'));
    const db = openDatabase(join(dir, 'db'));
    const service = new AgentService(promised(new SqliteAgentRepository(db, testSecretBox())), { now: () => 5 });
    const file = join(dir, 'agents.json');
    writeFileSync(file, JSON.stringify(entry));
    await service.loadFromFile('org', readAgentsFile(file, 'http://x'));
    await service.loadFromFile('org', readAgentsFile(file, 'http://x'));
    expect((await service.resolve('org', 'desk', 'latest')).version).toBe(1);
    writeFileSync(file, JSON.stringify({ ...entry, begin_message: 'Hello' }));
    await service.loadFromFile('org', readAgentsFile(file, 'http://x'));
    expect(await service.resolve('org', 'desk', 'production')).toMatchObject({ version: 2, isPublished: true });
    db.close();
  });
});
