import { Agent, type Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../src/net/egress.ts';
import { egressConnector, egressInterceptor } from '../../src/net/egress-guard.ts';
import { sendRequest } from '../../src/net/http.ts';

describe('the egress guard', () => {
  it('refuses a request the policy refuses before anything is dispatched', async () => {
    const policy = new EgressPolicy();
    policy.ownAddresses(['http://127.0.0.1:8080']);
    const agent = new Agent();
    let dispatched = 0;
    const below: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) => {
      dispatched++;
      return dispatch(options, handler);
    };
    // The last composed runs first: the guard sits above the counter.
    const guarded = agent.compose(below, egressInterceptor(policy));
    await expect(
      sendRequest('http://127.0.0.1:8080/v2/calls/list', { method: 'GET', dispatcher: guarded }),
    ).rejects.toMatchObject({ code: 'EGRESS_REFUSED' });
    expect(dispatched).toBe(0);
    await agent.close();
  });

  it('refuses to connect to an internal address after DNS, before any socket opens', async () => {
    const connect = egressConnector(new EgressPolicy(), 1_000);
    const error = await new Promise<Error | null>((resolve) => {
      connect(
        {
          hostname: 'localhost',
          host: 'localhost',
          protocol: 'http:',
          port: '11434',
          servername: undefined,
          localAddress: null,
          httpSocket: undefined,
        },
        (...args) => resolve(args[0]),
      );
    });
    expect(error).toMatchObject({ code: 'EGRESS_REFUSED' });
  });
});
