// What the stand-in voices share: a WebSocket server on 127.0.0.1 that checks the provider's key at the
// upgrade (refused with 401 otherwise), and a voice that speaks word by word with the embedded flite
// voice, so each word's start and end in the audio are known exactly.
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { muLawEncode } from '../../../../src/audio/g711.ts';
import { concatPcm, int16ToBuffer } from '../../../../src/audio/pcm.ts';
import { FliteTtsEngine } from '../../../../src/speech/tts/flite.ts';

export type StandInEncoding = 'mulaw' | 'pcm16';

interface WordAudio {
  word: string;
  bytes: Buffer;
  seconds: number;
}

/** The embedded voice, one word at a time, in the coding a provider was asked for. */
export class WordVoice {
  private readonly flite = new FliteTtsEngine({ voice: 'slt' });

  private closed = false;

  async say(word: string, rate: number, encoding: StandInEncoding): Promise<WordAudio> {
    const blocks: Int16Array[] = [];
    try {
      for await (const chunk of this.flite.synthesize(word, { sampleRate: rate, trimLeadIn: true }))
        blocks.push(chunk.samples);
    } catch (error) {
      // Closed with words still queued (a cut context the provider keeps flushing): nothing more is said.
      if (this.closed) return { word, bytes: Buffer.alloc(0), seconds: 0 };
      throw error;
    }
    const pcm = concatPcm(blocks);
    const bytes = encoding === 'mulaw' ? Buffer.from(muLawEncode(pcm)) : Buffer.from(int16ToBuffer(pcm));
    return { word, bytes, seconds: pcm.length / rate };
  }

  close(): Promise<void> {
    this.closed = true;
    return this.flite.close();
  }
}

interface StandInOptions {
  /** Whether the upgrade request carries the provider's key. */
  authorized(request: IncomingMessage): boolean;
  /** The path (without query) the provider serves its voice on. */
  path: RegExp;
  onConnection(socket: WebSocket, url: URL): void;
}

export interface StandInServer {
  /** ws://127.0.0.1:port — a voice's base_url. */
  readonly url: string;
  /** Connections opened so far (accepted ones). */
  readonly connections: number;
  /** Upgrades refused for a missing or wrong key. */
  readonly refused: number;
  /** Ends every connection (a provider gone), keeping the server. */
  drop(): void;
  close(): Promise<void>;
}

export async function startStandIn(options: StandInOptions): Promise<StandInServer> {
  let connections = 0;
  let refused = 0;
  const server = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    verifyClient: (info, done) => {
      const url = new URL(info.req.url ?? '/', 'ws://stand-in');
      if (!options.path.test(url.pathname)) return done(false, 404);
      if (!options.authorized(info.req)) {
        refused++;
        return done(false, 401);
      }
      done(true);
    },
  });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  server.on('connection', (socket, request) => {
    connections++;
    options.onConnection(socket, new URL(request.url ?? '/', 'ws://stand-in'));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    get refused() {
      return refused;
    },
    drop() {
      for (const client of server.clients) client.terminate();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}

/** Splits text into the words complete so far (followed by a space) and the rest, still being typed. */
export function completeWords(buffer: string): { words: string[]; rest: string } {
  const end = buffer.search(/\s\S*$/);
  if (end === -1) return { words: [], rest: buffer };
  return { words: buffer.slice(0, end).split(/\s+/).filter(Boolean), rest: buffer.slice(end).trimStart() };
}

/** Hooks a bench or test may set on a stand-in: when each utterance's first audio left it. */
export interface StandInHooks {
  firstAudioSent?: (at: number) => void;
}
