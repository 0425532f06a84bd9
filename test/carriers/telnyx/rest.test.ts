// Telnyx's SDK as the service builds it (src/carriers/telnyx/rest.ts): its requests go to TELNYX_API_BASE + /v2
// through the dispatcher given (the egress policy holds for them), with the account's key, never retried; an HTTP
// error is Telnyx's answer (status and errors), no answer at all a CarrierApiError.
import { afterEach, describe, expect, it } from 'vitest';
import { CarrierApiError } from '../../../src/carriers/carrier-rest.ts';
import { telnyxAnswer, telnyxClients } from '../../../src/carriers/telnyx/rest.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { OutboundHttp } from '../../../src/net/http.ts';
import { startServer, type TestServer } from '../../support/http-server.ts';
import { testDispatcher } from '../../support/outbound.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("Telnyx's SDK through the outbound layer", () => {
  it('a Call Control action goes to the API base with the bearer key; a 503 is answered once (the SDK does not retry it) with its errors', async () => {
    const refusal = { errors: [{ code: '10011', title: 'Service unavailable' }] };
    server = await startServer(
      (_req, res) => void res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify(refusal)),
    );
    const client = telnyxClients({ apiBase: server.url, dispatcher: testDispatcher })('KEY123');
    const answer = await telnyxAnswer(client.calls.actions.hangup('v3:abc', {}));
    expect(answer).toEqual({ status: 503, body: refusal });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: 'POST', url: '/v2/calls/v3:abc/actions/hangup' });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer KEY123');
  });

  it('is held to the egress policy: an address the policy does not open is never reached, and is no answer', async () => {
    server = await startServer((_req, res) => void res.end('{}'));
    const guarded = new OutboundHttp(new EgressPolicy([]));
    try {
      const client = telnyxClients({ apiBase: server.url, dispatcher: guarded.dispatcher() })('KEY123');
      const sent = telnyxAnswer(client.texml.calls.create('1', { From: '+14155550100', To: '+14155550101' }));
      await expect(sent).rejects.toBeInstanceOf(CarrierApiError);
      await expect(sent).rejects.toMatchObject({ status: undefined, message: /^Telnyx could not be reached/ });
      expect(server.requests).toEqual([]);
    } finally {
      await guarded.close();
    }
  });
});
