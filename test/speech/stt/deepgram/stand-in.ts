// A stand-in for Deepgram's live /v1/listen WebSocket, speaking its documented protocol
// (src/speech/stt/deepgram/protocol.ts) with real results: the audio is read by the embedded
// recogniser (../stand-in-ear.ts). It checks what Deepgram checks first (the path and the
// `Authorization: Token <key>` header: a wrong key is refused with 401 at the upgrade), decodes
// the encoding the query names (mulaw or linear16) at its sample_rate, sends interim results
// while the caller speaks, an is_final + speech_final result after `endpointing` ms of silence,
// UtteranceEnd after `utterance_end_ms` without words, a from_finalize result for each Finalize,
// and Metadata then a close for CloseStream.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { WebSocketServer, type WebSocket } from 'ws';
import { muLawDecode } from '../../../../src/audio/g711.ts';
import { bytesToInt16 } from '../../../../src/audio/pcm.ts';
import type { SttResult } from '../../../../src/speech/types.ts';
import { StandInEar } from '../stand-in-ear.ts';

export interface DeepgramStandInConnection {
  url: URL;
  headers: IncomingMessage['headers'];
  /** Text frames the client sent, parsed. */
  controls: { type: string }[];
  /** Bytes of audio received. */
  audioBytes: number;
}

export interface DeepgramStandIn {
  /** ws://127.0.0.1:port (the stt.base_url). */
  url: string;
  connections: DeepgramStandInConnection[];
  /** performance.now() of each from_finalize result sent: the bench's "provider final sent". */
  finalsSentAt: number[];
  /** Closes every live stream as Deepgram does on a failure: close code 1011 with its error in the reason. */
  breakStreams(): void;
  close(): Promise<void>;
}

const words = (r: SttResult) =>
  (r.words ?? []).map((w) => ({
    word: w.word.toLowerCase(),
    start: w.start,
    end: w.end,
    confidence: 0.9,
    punctuated_word: w.word,
  }));

function results(
  r: SttResult,
  at: { start: number; end: number },
  flags: { is_final: boolean; speech_final: boolean; from_finalize: boolean },
) {
  return {
    type: 'Results',
    channel_index: [0, 1],
    duration: Math.max(0, at.end - at.start),
    start: at.start,
    ...flags,
    channel: { alternatives: [{ transcript: r.text, confidence: 0.9, words: words(r) }] },
    metadata: { request_id: 'stand-in', model_info: { name: 'stand-in', version: '0', arch: 'pocketsphinx' } },
  };
}

export async function startDeepgramStandIn(apiKey: string): Promise<DeepgramStandIn> {
  const server: Server = createServer((_req, res) => res.writeHead(404).end());
  const sockets = new Set<WebSocket>();
  const connections: DeepgramStandInConnection[] = [];
  const finalsSentAt: number[] = [];
  const wss = new WebSocketServer({
    server,
    verifyClient: ({ req }, done) => {
      const path = new URL(req.url ?? '/', 'ws://x').pathname;
      if (path !== '/v1/listen') return done(false, 404, 'Not Found');
      if (req.headers.authorization !== `Token ${apiKey}`) return done(false, 401, 'Unauthorized');
      done(true);
    },
  });
  wss.on('connection', (socket, req) => {
    sockets.add(socket);
    const url = new URL(req.url ?? '/', 'ws://x');
    const connection: DeepgramStandInConnection = { url, headers: req.headers, controls: [], audioBytes: 0 };
    connections.push(connection);
    void serve(socket, connection, finalsSentAt).finally(() => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    connections,
    finalsSentAt,
    breakStreams() {
      for (const s of sockets) s.close(1011, 'NET-0000: the provider had an internal problem at 10.1.2.3');
    },
    async close() {
      for (const s of sockets) s.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function serve(socket: WebSocket, connection: DeepgramStandInConnection, finalsSentAt: number[]): Promise<void> {
  const q = connection.url.searchParams;
  const rate = Number(q.get('sample_rate'));
  const encoding = q.get('encoding');
  const endpointingMs = Number(q.get('endpointing') ?? 10);
  const utteranceEndMs = q.has('utterance_end_ms') ? Number(q.get('utterance_end_ms')) : null;
  const interim = q.get('interim_results') === 'true';
  if ((encoding !== 'mulaw' && encoding !== 'linear16') || !(rate === 8000 || rate === 16000)) {
    socket.close(1008, 'DATA-0000: unsupported encoding or rate');
    return;
  }
  const send = (message: unknown) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  /** Where the utterance under way began, on the audio clock. */
  let utteranceStart = 0;
  /** The end of the last word settled, for UtteranceEnd; null once sent. */
  let lastWordEnd: number | null = null;
  let ear: StandInEar | null = null;
  const settle = async (flags: { speech_final: boolean; from_finalize: boolean }) => {
    if (!ear) return;
    const end = ear.seconds;
    const result = await ear.settle();
    const start = utteranceStart;
    utteranceStart = end;
    if (result.words?.length) lastWordEnd = result.words.at(-1)!.end;
    send(results(result, { start, end }, { is_final: true, ...flags }));
    if (flags.from_finalize) finalsSentAt.push(performance.now());
  };
  const flagsOff = { is_final: false, speech_final: false, from_finalize: false };
  const opening = StandInEar.open(
    rate,
    {
      guess: (text) => {
        if (interim && ear) send(results({ text }, { start: utteranceStart, end: ear.seconds }, flagsOff));
      },
      pause: (silentMs) => {
        if (silentMs === endpointingMs) void settle({ speech_final: true, from_finalize: false });
      },
    },
    q.getAll('keyterm'),
  );
  const handle = (data: Buffer, isBinary: boolean) => {
    if (!ear) return;
    if (isBinary) {
      ear.hear(encoding === 'mulaw' ? muLawDecode(data) : bytesToInt16(data));
      if (utteranceEndMs !== null && lastWordEnd !== null && ear.seconds - lastWordEnd >= utteranceEndMs / 1000) {
        send({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: lastWordEnd });
        lastWordEnd = null;
      }
      return;
    }
    const control = JSON.parse(data.toString('utf8')) as { type: string };
    if (control.type === 'Finalize') void settle({ speech_final: false, from_finalize: true });
    if (control.type === 'CloseStream')
      void settle({ speech_final: false, from_finalize: false }).then(() => {
        send({
          type: 'Metadata',
          transaction_key: 'deprecated',
          request_id: 'stand-in',
          sha256: '0',
          created: new Date(0).toISOString(),
          duration: ear?.seconds ?? 0,
          channels: 1,
        });
        socket.close(1000);
      });
  };
  // Audio may come before the ear is open: held, then heard in order.
  const early: [Buffer, boolean][] = [];
  socket.on('message', (data: Buffer, isBinary) => {
    if (isBinary) connection.audioBytes += data.length;
    else connection.controls.push(JSON.parse(data.toString('utf8')) as { type: string });
    if (ear) handle(data, isBinary);
    else early.push([data, isBinary]);
  });
  ear = await opening;
  for (const [data, isBinary] of early.splice(0)) handle(data, isBinary);
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await ear.close();
}
