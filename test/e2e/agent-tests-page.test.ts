// The page's Tests view in Chromium against the real service: an agent's tests listed, a run
// against a version watched to its end with the failed assertion shown, and the diff against the
// earlier version's run.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, writeWav, type TestBrowser } from '../helpers/browser.ts';
import { KEYS, startTestService, type TestService } from '../helpers/service.ts';

const root = join(import.meta.dirname, '..', '..');
let service: TestService;
let browser: TestBrowser;
let workDir: string;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'voicecall-testspage-'));
  writeWav(join(workDir, 'mic.wav'), new Int16Array(16000), 16000);
  service = await startTestService();
  // An agent like the demo whose one test is quick: the caller hangs up 3 s into the call.
  const demo = (await service.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  expect((await service.request('POST', '/v2/agents', { body: { ...config, agent_id: 'quick' } })).status).toBe(201);
  const test = await service.request('POST', '/v2/agents/quick/tests', {
    body: {
      name: 'hangs up three seconds in',
      caller: { script: [{ wait_ms: 3000 }, { hangup: true }] },
      expect: { disconnection_reason: 'user_hangup' },
    },
  });
  expect(test.status).toBe(201);
  browser = await launchChromium(join(workDir, 'mic.wav'));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

describe('the Tests view of the page', () => {
  it("lists the agent's tests, runs them against a version, shows what failed and the diff against the earlier version", async () => {
    const page = await browser.context.newPage();
    try {
      await page.goto(`${service.url}/`);
      await page.fill('#api-key', KEYS.acme!);
      await page.click('#use-key');
      await page.waitForSelector('#agent option[value="quick"]', { state: 'attached' });
      await page.selectOption('#agent', 'quick');
      await page.waitForSelector('#test-list li >> text=hangs up three seconds in');

      await page.fill('#run-version', '1');
      await page.click('#run-tests');
      await page.waitForSelector('#run-summary[data-status="passed"]', { timeout: 60_000 });
      expect(await page.textContent('#run-summary')).toMatch(/^Version 1: 1 passed, 0 failed, 0 errors/);
      await page.waitForSelector('#run-diff >> text=No run of an earlier version to compare with.');

      // Version 2 of the agent, and a test that now expects the agent to hang up: it fails, and the diff says so.
      expect(
        (await service.request('PATCH', '/v2/agents/quick', { body: { begin_message: 'Hello from version two.' } }))
          .status,
      ).toBe(200);
      const [listed] = (
        (await service.request('POST', '/v2/agents/quick/tests/list', { body: {} })).body as {
          tests: { test_id: string }[];
        }
      ).tests;
      await service.request('PATCH', `/v2/agent-tests/${listed!.test_id}`, {
        body: { expect: { disconnection_reason: 'agent_hangup' } },
      });
      await page.fill('#run-version', 'latest');
      await page.click('#run-tests');
      await page.waitForSelector('#run-summary[data-status="failed"]', { timeout: 60_000 });
      expect(await page.textContent('#run-results .result.failed .why')).toBe(
        'disconnection_reason: expected agent_hangup, the call ended user_hangup',
      );
      await page.waitForSelector('#run-diff >> text=Against version 1');
      expect(await page.textContent('#run-diff ul')).toContain(
        'hangs up three seconds in: passed → failed; 1 turn differs',
      );
      await page.click('#run-results .result.failed summary');
      expect(await page.textContent('#run-results .result.failed details')).toContain('agent: Hello from version two.');
      mkdirSync(join(root, 'artifacts'), { recursive: true });
      await page.screenshot({ path: join(root, 'artifacts', 'agent-tests-page.png'), fullPage: true });
      await page.waitForSelector('#run-history li:nth-child(2)', { state: 'attached' });
    } catch (error) {
      mkdirSync(join(root, 'artifacts'), { recursive: true });
      await page
        .screenshot({ path: join(root, 'artifacts', 'agent-tests-page-failed.png'), fullPage: true })
        .catch(() => undefined);
      throw error;
    } finally {
      await page.close();
    }
  }, 150_000);
});
