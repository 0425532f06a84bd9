// A stand-in for Deepgram Aura's /v1/speak WebSocket: it checks the "Authorization: Token" header and
// the encoding (linear16, mulaw) and sample_rate it is asked for, sends Metadata on connecting, reads
// Speak/Flush/Clear/Close (zod), speaks the text held at each Flush with the embedded voice as binary
// audio frames (one per word), then {"type": "Flushed"}; a Clear drops what was still to come and is
// answered {"type": "Cleared"}.
import { z } from 'zod';
import type { WebSocket } from 'ws';
import {
  startStandIn,
  WordVoice,
  type StandInEncoding,
  type StandInHooks,
  type StandInServer,
} from '../stand-ins/common.ts';

export const DeepgramClientMessageSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('Speak'), text: z.string() }),
  z.strictObject({ type: z.literal('Flush') }),
  z.strictObject({ type: z.literal('Clear') }),
  z.strictObject({ type: z.literal('Close') }),
]);

export interface DeepgramStandIn extends StandInServer {
  readonly messages: z.infer<typeof DeepgramClientMessageSchema>[];
}

export async function startDeepgramStandIn(apiKey: string, hooks: StandInHooks = {}): Promise<DeepgramStandIn> {
  const voice = new WordVoice();
  const messages: z.infer<typeof DeepgramClientMessageSchema>[] = [];
  const server = await startStandIn({
    path: /^\/v1\/speak$/,
    authorized: (request) => request.headers.authorization === `Token ${apiKey}`,
    onConnection(socket, url) {
      const encoding = url.searchParams.get('encoding');
      const rate = Number(url.searchParams.get('sample_rate'));
      if ((encoding !== 'mulaw' && encoding !== 'linear16') || !(rate === 8000 || rate === 16000)) {
        socket.close(1008, 'unsupported encoding');
        return;
      }
      serve(socket, rate, encoding === 'mulaw' ? 'mulaw' : 'pcm16', voice, messages, hooks);
    },
  });
  return {
    get url() {
      return server.url;
    },
    get connections() {
      return server.connections;
    },
    get refused() {
      return server.refused;
    },
    messages,
    drop: () => server.drop(),
    async close() {
      await server.close();
      await voice.close();
    },
  };
}

function serve(
  socket: WebSocket,
  rate: number,
  encoding: StandInEncoding,
  voice: WordVoice,
  messages: z.infer<typeof DeepgramClientMessageSchema>[],
  hooks: StandInHooks,
): void {
  let buffer = '';
  let chain = Promise.resolve();
  /** Bumped by each Clear: work queued before it is dropped. */
  let generation = 0;
  let sequence = 0;
  const send = (message: object | Buffer): void => {
    if (socket.readyState !== socket.OPEN) return;
    socket.send(Buffer.isBuffer(message) ? message : JSON.stringify(message));
  };
  send({
    type: 'Metadata',
    request_id: 'stand-in',
    model_name: 'aura-2-thalia-en',
    model_version: '1',
    model_uuid: 'stand-in',
  });
  socket.on('message', (data) => {
    let message: z.infer<typeof DeepgramClientMessageSchema>;
    try {
      message = DeepgramClientMessageSchema.parse(JSON.parse(String(data)));
    } catch {
      send({ type: 'Warning', description: 'unreadable message', code: 'INVALID_MESSAGE' });
      return;
    }
    messages.push(message);
    switch (message.type) {
      case 'Speak':
        buffer += message.text;
        return;
      case 'Flush': {
        const words = buffer.split(/\s+/).filter(Boolean);
        buffer = '';
        const mine = generation;
        let first = true;
        for (const word of words)
          chain = chain.then(async () => {
            if (generation !== mine) return;
            const audio = await voice.say(word, rate, encoding);
            if (generation !== mine) return;
            if (first) hooks.firstAudioSent?.(performance.now());
            first = false;
            send(audio.bytes);
          });
        chain = chain.then(() => {
          if (generation === mine) send({ type: 'Flushed', sequence_id: sequence++ });
        });
        return;
      }
      case 'Clear':
        generation++;
        buffer = '';
        chain = chain.then(() => send({ type: 'Cleared', sequence_id: sequence++ }));
        return;
      case 'Close':
        void chain.then(() => socket.close(1000));
        return;
    }
  });
}
