import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  loadConfig,
  parseApiKeys,
  parseRtpPorts,
  parseSipListen,
  sipListenOfWorker,
} from '../src/config.ts';

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

describe('SIP settings', () => {
  it('binds nothing for SIP without SIP_LISTEN, and reads the listeners, public host, RTP range and media timeout with it', () => {
    expect(loadConfig({}).sip).toBeUndefined();
    expect(
      loadConfig({ SIP_LISTEN: 'udp:0.0.0.0:5060', SIP_PUBLIC_HOST: 'sip.example.com', RTP_PORTS: '30000-30099' }).sip,
    ).toEqual({
      listen: [{ transport: 'udp', host: '0.0.0.0', port: 5060 }],
      publicHost: 'sip.example.com',
      rtpPorts: { low: 30000, high: 30099 },
      mediaTimeoutMs: 30_000,
    });
    expect(loadConfig({ SIP_LISTEN: 'tcp:127.0.0.1:5060' }).sip?.rtpPorts).toEqual({ low: 20000, high: 29999 });
    expect(loadConfig({ SIP_LISTEN: 'tcp:127.0.0.1:5060', SIP_MEDIA_TIMEOUT_MS: '1500' }).sip?.mediaTimeoutMs).toBe(
      1500,
    );
    expect(() => loadConfig({ SIP_MEDIA_TIMEOUT_MS: '0' })).toThrow(/SIP_MEDIA_TIMEOUT_MS/);
  });

  it('stops at start on a bad SIP_LISTEN, SIP_PUBLIC_HOST or RTP_PORTS, naming the variable', () => {
    expect(() => loadConfig({ SIP_LISTEN: 'udp:sip.example:5060' })).toThrow(/SIP_LISTEN/);
    expect(() => loadConfig({ SIP_LISTEN: 'udp:127.0.0.1:5060', SIP_PUBLIC_HOST: '[::1]' })).toThrow(/SIP_PUBLIC_HOST/);
    expect(() => loadConfig({ RTP_PORTS: '80-90' })).toThrow(/RTP_PORTS/);
  });

  it('reads SIP_LISTEN udp and tcp entries, an IPv6 host in brackets', () => {
    expect(parseSipListen('udp:0.0.0.0:5060, tcp:[::1]:5061')).toEqual([
      { transport: 'udp', host: '0.0.0.0', port: 5060 },
      { transport: 'tcp', host: '::1', port: 5061 },
    ]);
  });

  it('gives worker i of WORKERS each SIP_LISTEN port + i (port 0 stays any port), and refuses a port that leaves the last worker none', () => {
    const listen = parseSipListen('udp:0.0.0.0:5060,tcp:[::1]:0');
    expect(sipListenOfWorker(listen, 0)).toBe('udp:0.0.0.0:5060,tcp:[::1]:0');
    expect(sipListenOfWorker(listen, 2)).toBe('udp:0.0.0.0:5062,tcp:[::1]:0');
    expect(parseSipListen(sipListenOfWorker(listen, 2))).toEqual([
      { transport: 'udp', host: '0.0.0.0', port: 5062 },
      { transport: 'tcp', host: '::1', port: 0 },
    ]);
    const high = parseSipListen('udp:127.0.0.1:65534');
    expect(sipListenOfWorker(high, 1)).toBe('udp:127.0.0.1:65535');
    expect(() => sipListenOfWorker(high, 2)).toThrow(ConfigError);
    expect(() => sipListenOfWorker(high, 2)).toThrow(/SIP_LISTEN.*worker 2/);
  });

  it('refuses in SIP_LISTEN another transport, a host that is not an address, a bad port, a transport twice, and nothing', () => {
    for (const text of [
      'sctp:0.0.0.0:5060',
      'udp:sip.example:5060',
      'udp:0.0.0.0:70000',
      'udp:0.0.0.0',
      'udp:1.2.3.4:1,udp:1.2.3.4:2',
      ' , ',
    ])
      expect(() => parseSipListen(text), text).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });

  it('reads RTP_PORTS LOW-HIGH, starting at the first even port', () => {
    expect(parseRtpPorts('20000-29999')).toEqual({ low: 20000, high: 29999 });
    expect(parseRtpPorts(' 30001 - 30010 ')).toEqual({ low: 30002, high: 30010 });
  });

  it('refuses an RTP_PORTS range that is not LOW-HIGH inside 1024-65535 with room for one even/odd pair', () => {
    for (const text of ['', '20000', '29999-20000', '80-1000', '60000-70000', '20000-20000', '20001-20002', 'a-b'])
      expect(() => parseRtpPorts(text), text).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });
});
