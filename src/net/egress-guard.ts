// The egress policy (egress.ts) as the outbound dispatcher applies it, twice: an interceptor that
// refuses a request before anything is sent (not http(s), the service's own address but its demo
// peer), and a connector that opens a connection only to an address the policy allowed after DNS —
// the very address it checked, so a name cannot resolve to another one between check and connect.
import { buildConnector, type Dispatcher } from 'undici';
import { EgressRefusedError, type EgressPolicy } from './egress.ts';

/** Refuses, before anything is sent, a request the policy refuses by its URL. */
export function egressInterceptor(policy: EgressPolicy): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) => {
    const refusal = policy.requestRefusal(new URL(options.path, options.origin));
    if (refusal) throw new EgressRefusedError(`egress refused: ${String(options.origin)} is ${refusal}`);
    return dispatch(options, handler);
  };
}

/** Opens a connection only to the address the policy allowed for the host. */
export function egressConnector(policy: EgressPolicy, connectTimeoutMs: number): buildConnector.connector {
  const open = buildConnector({ timeout: connectTimeoutMs });
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    // Only the hostname changes: TLS still names (and checks) the host the URL gave.
    policy.resolve(options.hostname, port).then(
      (address) => open({ ...options, hostname: address }, callback),
      (error: Error) => callback(error, null),
    );
  };
}
