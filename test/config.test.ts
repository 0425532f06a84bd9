import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseApiKeys } from '../src/config.ts';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8080, host: '127.0.0.1', dataDir: './data', apiKeys: [], publicUrl: undefined, logLevel: 'info', agentsFile: 'media/agents/demo.json', bodyLimitBytes: 1048576 });
  });

  it('reads org_id:key pairs, and gives a bare key to org default', () => {
    expect(parseApiKeys('acme:k1-aaaaaaaa, bare-key-bbbbbbbb ,globex:k2-cccccccc')).toEqual([
      { orgId: 'acme', key: 'k1-aaaaaaaa' },
      { orgId: 'default', key: 'bare-key-bbbbbbbb' },
      { orgId: 'globex', key: 'k2-cccccccc' },
    ]);
  });

  it('refuses short keys, duplicate keys and bad org ids', () => {
    expect(() => parseApiKeys('acme:short')).toThrow(ConfigError);
    expect(() => parseApiKeys('a:same-key-123,b:same-key-123')).toThrow(/twice/);
    expect(() => parseApiKeys('bad org:key-12345678')).toThrow(/organization id/);
  });

  it('refuses a bad PORT or PUBLIC_URL with a message naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ PUBLIC_URL: 'ftp://x' })).toThrow(/PUBLIC_URL/);
  });

  it('drops a trailing slash from PUBLIC_URL', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://calls.example.com/' }).publicUrl).toBe('https://calls.example.com');
  });

  it('turns Twilio on only with both account sid and token, and checks the sid shape', () => {
    const sid = `AC${'0'.repeat(32)}`;
    expect(loadConfig({ TWILIO_ACCOUNT_SID: sid }).twilio).toBeUndefined();
    expect(loadConfig({ TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: 'tok' }).twilio).toEqual({ accountSid: sid, authToken: 'tok', apiBase: 'https://api.twilio.com' });
    expect(() => loadConfig({ TWILIO_ACCOUNT_SID: 'AC123' })).toThrow(/TWILIO_ACCOUNT_SID/);
    expect(loadConfig({})).toMatchObject({ ringTimeoutMs: 30_000, maxTasks: 10_000, batchConcurrency: 5, schedulerPollMs: 1_000, schedulerLeaseMs: 30_000 });
  });
});
