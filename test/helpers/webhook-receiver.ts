// An organization's webhook receiver for e2e tests: answers 200 to each POST and keeps its event and call id in order.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedHook {
  event: string;
  callId: string;
}

/** Listens on 127.0.0.1 at `port` (a free one when 0): the URL to give `/v2/webhook-settings`, and what came. */
export async function webhookReceiver(
  port = 0,
): Promise<{ url: string; hooks: ReceivedHook[]; close(): Promise<void> }> {
  const hooks: ReceivedHook[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { event: string; call?: { call_id: string } };
      hooks.push({ event: message.event, callId: message.call?.call_id ?? '' });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    hooks,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
