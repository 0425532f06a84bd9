import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.ts';
import { EgressPolicy } from '../../src/net/egress.ts';
import { OutboundHttp, readTextCapped, sendRequest } from '../../src/net/http.ts';

const refusal = (policy: EgressPolicy, url: string) => policy.literalRefusal(url);

describe('the egress policy', () => {
  const policy = new EgressPolicy();

  it('refuses loopback, private, shared, link-local, unique-local, multicast and unspecified addresses', () => {
    for (const url of [
      'http://127.0.0.1:11434/v1',
      'http://10.1.2.3/',
      'http://172.20.0.5/',
      'http://192.168.1.10/',
      'http://100.64.0.1/',
      'http://169.254.10.10/',
      'http://0.0.0.0:8080/',
      'http://224.0.0.1/',
      'http://[::1]:8000/',
      'http://[fd12:3456::1]/',
      'http://[fe80::1]/',
      'http://[ff02::1]/',
    ]) {
      expect(refusal(policy, url), url).toBe('an internal address');
    }
  });

  it('refuses the cloud metadata addresses, and IPv4 hidden in IPv6', () => {
    expect(refusal(policy, 'http://169.254.169.254/latest/meta-data/')).toBe('a cloud metadata address');
    expect(refusal(policy, 'http://[fd00:ec2::254]/')).toBe('a cloud metadata address');
    expect(refusal(policy, 'http://[::ffff:169.254.169.254]/')).toBe('a cloud metadata address');
    expect(refusal(policy, 'http://[::ffff:7f00:1]/')).toBe('an internal address');
  });

  it('lets public addresses and names through (names are checked when they resolve)', () => {
    expect(refusal(policy, 'https://93.184.216.34/v1')).toBeNull();
    expect(refusal(policy, 'https://[2606:4700::1111]/')).toBeNull();
    expect(refusal(policy, 'http://localhost:11434/v1')).toBeNull();
  });

  it('opens exactly what EGRESS_ALLOW lists: a CIDR, or one host:port', () => {
    const open = EgressPolicy.fromEnv('10.0.0.0/8, 127.0.0.1:11434,[::1]:8000');
    expect(refusal(open, 'http://10.9.9.9/')).toBeNull();
    expect(refusal(open, 'http://127.0.0.1:11434/v1')).toBeNull();
    expect(refusal(open, 'http://127.0.0.1:11435/v1')).toBe('an internal address');
    expect(refusal(open, 'http://[::1]:8000/')).toBeNull();
    expect(refusal(open, 'http://192.168.0.1/')).toBe('an internal address');
  });

  it('keeps the metadata addresses refused even when EGRESS_ALLOW lists them', () => {
    const open = EgressPolicy.fromEnv('169.254.0.0/16,169.254.169.254:80');
    expect(refusal(open, 'http://169.254.169.254/')).toBe('a cloud metadata address');
    expect(refusal(open, 'http://169.254.1.1/')).toBeNull();
  });

  it('refuses the service’s own address but for its demo peer', () => {
    const own = new EgressPolicy();
    own.ownAddresses(['http://127.0.0.1:8080']);
    expect(refusal(own, 'http://127.0.0.1:8080/demo/llm/v1')).toBeNull();
    expect(refusal(own, 'http://127.0.0.1:8080/v2/calls/list')).toBe('the service’s own address');
    expect(refusal(own, 'http://127.0.0.1:8080/telephony/twilio/voice')).toBe('the service’s own address');
  });

  it('refuses a malformed EGRESS_ALLOW entry at start-up, naming it', () => {
    expect(() => EgressPolicy.fromEnv('10.0.0.0/40')).toThrow(ConfigError);
    expect(() => EgressPolicy.fromEnv('127.0.0.1')).toThrow(/"127.0.0.1" is neither a CIDR/);
    expect(() => EgressPolicy.fromEnv('host:99999')).toThrow(ConfigError);
  });

  it('checks every address a name resolves to: localhost is refused, unless its host:port is allowed', async () => {
    await expect(policy.resolve('localhost', 11434)).rejects.toMatchObject({ code: 'EGRESS_REFUSED' });
    await expect(EgressPolicy.fromEnv('localhost:11434').resolve('localhost', 11434)).resolves.toMatch(
      /^(127\.0\.0\.1|::1)$/,
    );
  });
});

describe('outbound HTTP held to the egress policy', () => {
  let server: Server | undefined;
  let connections = 0;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });
  async function serve(): Promise<number> {
    connections = 0;
    server = createServer((_req, res) => res.end('inside'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  it('never opens a connection to an internal address, by address or by a name that resolves to one', async () => {
    const port = await serve();
    const outbound = new OutboundHttp(new EgressPolicy());
    await expect(
      sendRequest(`http://127.0.0.1:${port}/`, { method: 'GET', dispatcher: outbound.dispatcher() }),
    ).rejects.toMatchObject({ code: 'EGRESS_REFUSED' });
    await expect(
      sendRequest(`http://localhost:${port}/`, { method: 'GET', dispatcher: outbound.dispatcher() }),
    ).rejects.toMatchObject({ code: 'EGRESS_REFUSED' });
    expect(connections).toBe(0);
    await outbound.close();
  });

  it('reaches an address EGRESS_ALLOW opens', async () => {
    const port = await serve();
    const outbound = new OutboundHttp(EgressPolicy.fromEnv(`127.0.0.1:${port}`));
    const res = await sendRequest(`http://127.0.0.1:${port}/`, { method: 'GET', dispatcher: outbound.dispatcher() });
    expect(await readTextCapped(res.body, 100)).toBe('inside');
    await outbound.close();
  });

  it('sends nothing to the service’s own address but its demo peer, even where EGRESS_ALLOW opens loopback', async () => {
    const port = await serve();
    const policy = EgressPolicy.fromEnv('127.0.0.0/8');
    policy.ownAddresses([`http://127.0.0.1:${port}`]);
    const outbound = new OutboundHttp(policy);
    await expect(
      sendRequest(`http://127.0.0.1:${port}/v2/calls/list`, { method: 'POST', dispatcher: outbound.dispatcher() }),
    ).rejects.toMatchObject({
      code: 'EGRESS_REFUSED',
    });
    expect(connections).toBe(0);
    const demo = await sendRequest(`http://127.0.0.1:${port}/demo/llm/v1/chat/completions`, {
      method: 'POST',
      dispatcher: outbound.dispatcher(),
    });
    expect(demo.statusCode).toBe(200);
    await demo.body.dump();
    await outbound.close();
  });
});
