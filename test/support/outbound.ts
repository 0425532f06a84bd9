// What unit tests send through: the service's own outbound dispatcher (src/net/http.ts
// OutboundHttp), held to the egress policy with the allowance the test services get
// (EGRESS_ALLOW=127.0.0.0/8, test/helpers/service.ts), so stand-ins on loopback are reached.
import { EgressPolicy } from '../../src/net/egress.ts';
import { OutboundHttp } from '../../src/net/http.ts';

export const testDispatcher = new OutboundHttp(EgressPolicy.fromEnv('127.0.0.0/8')).dispatcher();
