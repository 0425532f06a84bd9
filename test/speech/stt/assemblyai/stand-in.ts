// A stand-in for AssemblyAI's Universal-Streaming v3 WebSocket, speaking its documented protocol
// (src/speech/stt/assemblyai/protocol.ts) with real results: the audio is read by the embedded
// recogniser (../stand-in-ear.ts). It checks what AssemblyAI checks (the path, the
// `Authorization: <key>` header: a wrong key is refused with 401 at the upgrade, and each audio
// message between 50 and 1000 ms, else an Error 3007 and a close), sends Begin, Turn messages
// while the caller speaks (end_of_turn false, the guesses as words not final), and ends a turn
// (end_of_turn true with an end_of_turn_confidence, then the formatted turn) as AssemblyAI's turn
// detection does, with its documented defaults unless the query sets them: once the silence after
// speech reaches min_end_of_turn_silence_when_confident (400 ms) when the turn model's confidence
// passes end_of_turn_confidence_threshold (0.4), else once it reaches max_turn_silence (1280 ms);
// and at once on ForceEndpoint (confidence 1). Terminate: Termination, then close.
//
// The turn model is AssemblyAI's own neural network, which a stand-in cannot have: its confidence
// here is one fixed figure per stand-in (`endOfTurnConfidence`, 0.8 unless given), the same at
// every pause whatever was said. So the stand-in gives AssemblyAI's end-of-turn signal with its
// documented timing (0.8: always at the short silence; under the threshold: always at the long
// one), never its accuracy: what it measures is what the call does with a signal of that timing.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { WebSocketServer, type WebSocket } from 'ws';
import { muLawDecode } from '../../../../src/audio/g711.ts';
import { bytesToInt16 } from '../../../../src/audio/pcm.ts';
import type { SttResult } from '../../../../src/speech/types.ts';
import { StandInEar } from '../stand-in-ear.ts';

export interface AssemblyAiStandInConnection {
  url: URL;
  headers: IncomingMessage['headers'];
  controls: { type: string }[];
  audioBytes: number;
  /** Length of each audio message, ms. */
  chunkMs: number[];
  /** Each end of turn the stand-in's turn detection sent: after how much silence, with what confidence. */
  turnEnds: { silentMs: number; confidence: number }[];
}

export interface AssemblyAiStandIn {
  url: string;
  connections: AssemblyAiStandInConnection[];
  /**
   * performance.now() of each formatted end-of-turn Turn sent for a ForceEndpoint: the bench's "provider final
   * sent".
   */
  finalsSentAt: number[];
  /** Fails every live stream as AssemblyAI does: an Error message, then a close with its code. */
  breakStreams(): void;
  close(): Promise<void>;
}

/** AssemblyAI's turn detection defaults, for a query that does not set them. */
const TURN_DEFAULTS = {
  end_of_turn_confidence_threshold: 0.4,
  min_end_of_turn_silence_when_confident: 400,
  max_turn_silence: 1280,
} as const;

export interface AssemblyAiStandInOptions {
  /** The stand-in turn model's confidence at every pause (it has no model of its own); 0.8 unless given. */
  endOfTurnConfidence?: number;
}

const formatted = (text: string): string =>
  text ? `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.?!]$/.test(text) ? '' : '.'}` : '';

export async function startAssemblyAiStandIn(
  apiKey: string,
  options: AssemblyAiStandInOptions = {},
): Promise<AssemblyAiStandIn> {
  const confidence = options.endOfTurnConfidence ?? 0.8;
  const server: Server = createServer((_req, res) => res.writeHead(404).end());
  const sockets = new Set<WebSocket>();
  const connections: AssemblyAiStandInConnection[] = [];
  const finalsSentAt: number[] = [];
  const wss = new WebSocketServer({
    server,
    verifyClient: ({ req }, done) => {
      const path = new URL(req.url ?? '/', 'ws://x').pathname;
      if (path !== '/v3/ws') return done(false, 404, 'Not Found');
      if (req.headers.authorization !== apiKey) return done(false, 401, 'Unauthorized');
      done(true);
    },
  });
  wss.on('connection', (socket, req) => {
    sockets.add(socket);
    const connection: AssemblyAiStandInConnection = {
      url: new URL(req.url ?? '/', 'ws://x'),
      headers: req.headers,
      controls: [],
      audioBytes: 0,
      chunkMs: [],
      turnEnds: [],
    };
    connections.push(connection);
    void serve(socket, connection, finalsSentAt, confidence).finally(() => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections,
    finalsSentAt,
    breakStreams() {
      for (const s of sockets) {
        s.send(JSON.stringify({ type: 'Error', error_code: 3005, error: 'Internal failure on worker 10.1.2.3' }));
        s.close(3005, 'Internal failure on worker 10.1.2.3');
      }
    },
    async close() {
      for (const s of sockets) s.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function serve(
  socket: WebSocket,
  connection: AssemblyAiStandInConnection,
  finalsSentAt: number[],
  modelConfidence: number,
): Promise<void> {
  const q = connection.url.searchParams;
  const setting = (name: keyof typeof TURN_DEFAULTS) => (q.has(name) ? Number(q.get(name)) : TURN_DEFAULTS[name]);
  const confident = modelConfidence > setting('end_of_turn_confidence_threshold');
  // The silence after which the turn detection ends a turn: the short one when its model is confident.
  // (The ear hears silence in steps of 10 ms.)
  const endAfterMs =
    Math.ceil(setting(confident ? 'min_end_of_turn_silence_when_confident' : 'max_turn_silence') / 10) * 10;
  const rate = Number(q.get('sample_rate'));
  const encoding = q.get('encoding') ?? 'pcm_s16le';
  const formatTurns = q.get('format_turns') === 'true';
  if (!q.get('speech_model') || !(rate === 8000 || rate === 16000) || !['pcm_s16le', 'pcm_mulaw'].includes(encoding)) {
    socket.send(JSON.stringify({ type: 'Error', error_code: 3006, error: 'Invalid Message' }));
    socket.close(3006, 'Invalid Message');
    return;
  }
  const keyterms = q.has('keyterms_prompt') ? (JSON.parse(q.get('keyterms_prompt')!) as string[]) : [];
  const send = (message: unknown) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  let turnOrder = 0;
  let turnStart = 0;
  let ear: StandInEar | null = null;
  const turn = (
    text: string,
    words: SttResult['words'],
    flags: { end: boolean; formatted: boolean; final: boolean },
    confidence: number,
  ) => ({
    type: 'Turn',
    turn_order: turnOrder,
    turn_is_formatted: flags.formatted,
    end_of_turn: flags.end,
    transcript: flags.final ? text : '',
    end_of_turn_confidence: confidence,
    words: (words ?? []).map((w) => ({
      start: Math.round(w.start * 1000),
      end: Math.round(w.end * 1000),
      text: w.word,
      confidence: 0.9,
      word_is_final: flags.final,
    })),
    utterance: flags.end ? text : '',
  });
  /** The latest guess at the turn under way, as words. */
  let guessed: { text: string; words: NonNullable<SttResult['words']> } | null = null;
  /**
   * Ends the turn under way (if words were heard): end_of_turn, then its formatted copy. The turn
   * detection's own end goes out when the silence is reached, with the words guessed so far, as
   * AssemblyAI's does (its words are final by then; this stand-in's reading takes about a second
   * more): the formatted copy follows with the words read. A ForceEndpoint is answered once read.
   */
  const endTurn = async (confidence: number, forced: boolean) => {
    if (!ear?.heardSpeech) return;
    const order = turnOrder++;
    const early = !forced && guessed ? guessed : null;
    guessed = null;
    if (early)
      send({
        ...turn(early.text, early.words, { end: true, formatted: false, final: true }, confidence),
        turn_order: order,
      });
    const result = await ear.settle();
    turnStart = ear.seconds;
    if (!early)
      send({
        ...turn(result.text.toLowerCase(), result.words, { end: true, formatted: false, final: true }, confidence),
        turn_order: order,
      });
    if (formatTurns)
      send({
        ...turn(formatted(result.text), result.words, { end: true, formatted: true, final: true }, confidence),
        turn_order: order,
      });
    if (forced) finalsSentAt.push(performance.now());
  };
  const opening = StandInEar.open(
    rate,
    {
      guess: (text) => {
        if (!ear) return;
        // The guesses as words spread over the turn so far, none final yet.
        const said = text.split(/\s+/);
        const span = (ear.seconds - turnStart) / said.length;
        const words = said.map((word, i) => ({ word, start: turnStart + i * span, end: turnStart + (i + 1) * span }));
        guessed = { text: text.toLowerCase(), words };
        send(turn(text, words, { end: false, formatted: false, final: false }, 0.01));
      },
      pause: (silentMs) => {
        if (silentMs !== endAfterMs || !ear?.heardSpeech) return;
        connection.turnEnds.push({ silentMs, confidence: modelConfidence });
        void endTurn(modelConfidence, false);
      },
    },
    keyterms,
  );
  const handle = (data: Buffer, isBinary: boolean) => {
    if (!ear) return;
    if (isBinary) {
      ear.hear(encoding === 'pcm_mulaw' ? muLawDecode(data) : bytesToInt16(data));
      return;
    }
    const control = JSON.parse(data.toString('utf8')) as { type: string };
    if (control.type === 'ForceEndpoint') void endTurn(1, true);
    if (control.type === 'Terminate')
      void endTurn(1, false).then(() => {
        send({
          type: 'Termination',
          audio_duration_seconds: ear?.seconds ?? 0,
          session_duration_seconds: ear?.seconds ?? 0,
        });
        socket.close(1000);
      });
  };
  const early: [Buffer, boolean][] = [];
  socket.on('message', (data: Buffer, isBinary) => {
    if (isBinary) {
      connection.audioBytes += data.length;
      const ms = ((encoding === 'pcm_mulaw' ? data.length : data.length / 2) / rate) * 1000;
      connection.chunkMs.push(ms);
      if (ms < 50 || ms > 1000) {
        send({ type: 'Error', error_code: 3007, error: 'Input duration violation: 20 ms' });
        socket.close(3007, 'Input duration violation');
        return;
      }
    } else connection.controls.push(JSON.parse(data.toString('utf8')) as { type: string });
    if (ear) handle(data, isBinary);
    else early.push([data, isBinary]);
  });
  // The session begins at once, as AssemblyAI's does; audio that comes before the ear is open is held.
  send({
    type: 'Begin',
    id: `stand-in-${connection.url.search.length}`,
    expires_at: Math.floor(Date.now() / 1000) + 10_800,
  });
  ear = await opening;
  for (const [data, isBinary] of early.splice(0)) handle(data, isBinary);
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await ear.close();
}
