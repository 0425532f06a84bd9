// A real node:http server on 127.0.0.1 port 0 for tests: records requests and watches sockets
// so a test can see that a cancelled client really closed its connection.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Client port: equal for two requests means one reused connection. */
  remotePort: number | undefined;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string, n: number) => void | Promise<void>;

export interface TestServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Resolves when the connection that carried request n (1-based) is closed. */
  requestSocketClosed(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const requestSockets: Socket[] = [];
  const server = createServer((req, res) => {
    requestSockets.push(req.socket);
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        remotePort: req.socket.remotePort,
      });
      void handler(req, res, body, requests.length);
    });
  });
  server.on('connection', (s: Socket) => {
    s.setNoDelay(true);
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    requestSocketClosed: async (n) => {
      while (requestSockets.length < n) await new Promise((r) => setTimeout(r, 1));
      const s = requestSockets[n - 1] as Socket;
      if (s.destroyed) return;
      await new Promise<void>((resolve) => s.once('close', () => resolve()));
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 1));

/** Writes `data` in pieces of `size` bytes, pausing between them so each arrives as its own read. */
export async function writeInPieces(res: ServerResponse, data: string | Buffer, size: number): Promise<void> {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  for (let i = 0; i < buf.length; i += size) {
    if (res.destroyed) return;
    res.write(buf.subarray(i, i + size));
    await tick();
  }
}

export function sseHeaders(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

const created = 1_700_000_000;
/** One chat.completion.chunk event, `data: {...}` plus the blank line. */
export function chunk(delta: Record<string, unknown>, finish: string | null = null, eol = '\n'): string {
  const body = {
    id: 'c1',
    object: 'chat.completion.chunk',
    created,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}${eol}${eol}`;
}

export function tokenStream(tokens: string[], eol = '\n'): string {
  let out = chunk({ role: 'assistant', content: '' }, null, eol);
  for (const t of tokens) out += chunk({ content: t }, null, eol);
  out += chunk({}, 'stop', eol);
  out += `data: [DONE]${eol}${eol}`;
  return out;
}

/** A whole streamed reply: text split into word tokens, then tool calls (arguments in two fragments). */
export function replyStream(text: string, calls: { id: string; name: string; arguments: string }[] = []): string {
  let out = chunk({ role: 'assistant', content: '' });
  for (const token of text.match(/\S+\s*/g) ?? []) out += chunk({ content: token });
  calls.forEach((c, index) => {
    const half = Math.floor(c.arguments.length / 2);
    out += chunk({
      tool_calls: [
        { index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments.slice(0, half) } },
      ],
    });
    out += chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(half) } }] });
  });
  out += chunk({}, calls.length > 0 ? 'tool_calls' : 'stop');
  return `${out}data: [DONE]\n\n`;
}
