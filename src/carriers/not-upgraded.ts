// The media routes speak WebSocket only: a plain HTTP request to one is told so in the API's error
// shape (426 with Upgrade: websocket), not with an empty 404.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';

export async function answerNotUpgraded(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const error = new ApiError(
    'UPGRADE_REQUIRED',
    `${request.url.split('?')[0]} is a WebSocket endpoint: open it with Upgrade: websocket`,
  );
  await reply.code(error.status).header('upgrade', 'websocket').send(error.toBody());
}
