import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseApiKeys } from '../src/config.ts';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: './data',
      apiKeys: [],
      publicUrl: undefined,
      logLevel: 'info',
      agentsFile: 'media/agents/demo.json',
      bodyLimitBytes: 1048576,
    });
  });

  const key = (c: string) => `${c}-`.padEnd(32, c);

  it('reads org_id:key pairs, and gives a bare key to org default', () => {
    expect(parseApiKeys(`acme:${key('a')}, ${key('b')} ,globex:${key('c')}`)).toEqual([
      { orgId: 'acme', key: key('a') },
      { orgId: 'default', key: key('b') },
      { orgId: 'globex', key: key('c') },
    ]);
  });

  it('refuses keys shorter than 32 characters (guessable), duplicate keys and bad org ids, naming each', () => {
    expect(() => parseApiKeys('acme:short')).toThrow(ConfigError);
    expect(() => parseApiKeys(`acme:${key('a').slice(0, 31)}`)).toThrow(/acme is shorter than 32 characters/);
    expect(() => parseApiKeys(`a:${key('s')},b:${key('s')}`)).toThrow(/twice/);
    expect(() => parseApiKeys(`bad org:${key('k')}`)).toThrow(/organization id/);
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
    expect(loadConfig({ TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: 'tok' }).twilio).toEqual({
      accountSid: sid,
      authToken: 'tok',
      apiBase: 'https://api.twilio.com',
    });
    expect(() => loadConfig({ TWILIO_ACCOUNT_SID: 'AC123' })).toThrow(/TWILIO_ACCOUNT_SID/);
    expect(loadConfig({})).toMatchObject({
      ringTimeoutMs: 30_000,
      maxTasks: 10_000,
      batchConcurrency: 5,
      schedulerPollMs: 1_000,
      schedulerLeaseMs: 30_000,
    });
  });
});
