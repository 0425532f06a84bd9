// Every upgrade request, on every route (the media sockets, a call's listener, any route added
// later), is either served as a WebSocket or answered and closed. Node hands an upgrade request's
// socket over to the 'upgrade' listeners and no longer reads it or closes it: once fastify has
// answered one (401, 429, 404, 503 ...), nobody else would, so the socket is ended here after the
// answer is written, and whatever the client still sends is read and dropped so its own close
// is seen. At shutdown a socket still waiting for its answer is destroyed: server.close() waits
// for every connection, and none may hold it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/websocket';

/** How long an answered upgrade's socket may wait for its client to close before it is destroyed. */
export const REFUSED_UPGRADE_LINGER_MS = 2_000;

/** Ends a socket nobody will serve once its answer is written, then lets it go. */
export function closeUnservedSocket(socket: Duplex, lingerMs: number): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), lingerMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // Read and drop what the client still sends: unread bytes at close would make the kernel reset
  // the connection, and the client lose the answer it has not read yet.
  socket.on('data', () => undefined);
  socket.resume();
  socket.end();
}

/** Requests that reached the server's 'upgrade' listeners (their sockets have left Node's HTTP parser). */
const upgrades = new WeakSet<IncomingMessage>();

/**
 * Ends an upgrade request's socket once `reply` is written; nothing for any other request. For
 * answers given where no route's hooks run (fastify's frameworkErrors).
 */
export function closeAfterAnswer(request: IncomingMessage, reply: ServerResponse): void {
  if (upgrades.has(request)) reply.once('finish', () => closeUnservedSocket(request.socket, REFUSED_UPGRADE_LINGER_MS));
}

/** Call after @fastify/websocket is registered on `app`. */
export function closeRefusedUpgrades(app: FastifyInstance): void {
  /** Sockets of upgrade requests not (yet) served as a WebSocket. */
  const unserved = new Set<Duplex>();
  // Prepended: the request is known as an upgrade before fastify routes it.
  app.server.prependListener('upgrade', (request: IncomingMessage, socket: Duplex) => {
    upgrades.add(request);
    unserved.add(socket);
    socket.once('close', () => unserved.delete(socket));
  });
  app.websocketServer.on('connection', (_socket, request: IncomingMessage) => unserved.delete(request.socket));
  // onResponse runs once the answer is written; a served WebSocket (a hijacked reply) never gets here.
  app.addHook('onResponse', async (request) => {
    if (upgrades.has(request.raw)) closeUnservedSocket(request.raw.socket, REFUSED_UPGRADE_LINGER_MS);
  });
  app.addHook('preClose', async () => {
    for (const socket of unserved) socket.destroy();
    unserved.clear();
  });
}
