// AssemblyAI's Universal-Streaming recogniser (v3) as an agent's stt.engine "assemblyai": one
// WebSocket per call stream (protocol.ts gives the messages), opened through the egress policy's
// opener, closed (Terminate) with the call. The caller's audio
// goes out as the line carried it: pcm_mulaw at 8 kHz from a phone line, pcm_s16le at the line's
// rate otherwise, never resampled, in messages of at least 50 ms as AssemblyAI asks. A Turn's words
// are the partials; an ended (formatted) turn is settled; ForceEndpoint settles the turn under way
// when the call ends the caller's turn. AssemblyAI's end_of_turn and its end_of_turn_confidence
// go to the call's end-of-turn policy as one more input, never as the decision. stt.phrases are
// its keyterms_prompt.
//
// With format_turns on, an ended turn comes twice. AssemblyAI's message sequence: "Once the turn
// ends, if formatting is enabled there will be an additional message where "turn_is_formatted":True
// comes back. This will format the final message." format_turns gives "formatted final transcripts
// with punctuation, casing, and inverse text normalization (e.g. dates, times, phone numbers)", so
// the copy's words may differ ("nine four one oh seven" as one "94107"); its API reference shows it as
//   {"type": "Turn", "turn_order": 0, "turn_is_formatted": true, "end_of_turn": true,
//    "transcript": "Hello world.", "end_of_turn_confidence": 0.98, "words": [{"text": "Hello",
//    "start": 0, "end": 500, "confidence": 0.99}, {"text": "world.", "start": 500, "end": 1000, …}]}
// (same turn_order as the first, no word_is_final). So one ended turn gives one verdict (the first
// copy's) and one final text: the formatted one when it comes before the turn's final is taken
// (finalize()'s grace), else the first copy's words, and a copy that comes after is dropped, never
// read into the next turn.
//
// AssemblyAI's own SDK is not used: it makes its sockets with a module-level factory over its own
// `ws` import, with no way to hand it an opened socket, so the egress policy could not hold; and
// it is not a dependency. The protocol is small: ws + the zod schemas in protocol.ts.
import type { OpenWebSocket } from '../../../net/websocket.ts';
import { realTimers, type Timers } from '../../../timers.ts';
import type { SttEngine, SttResult, SttStream, SttStreamOptions } from '../../types.ts';
import { lineBytes, openRecogniserSocket } from '../provider-socket.ts';
import { STREAMING_STT_DEFAULTS, StreamingSttStream, type StreamingStreamSettings } from '../streaming-stream.ts';
import {
  ASSEMBLYAI_READ_TYPES,
  AssemblyAiErrorSchema,
  AssemblyAiMessageSchema,
  type AssemblyAiMessage,
} from './protocol.ts';

const ASSEMBLYAI_DEFAULTS = {
  baseUrl: 'wss://streaming.assemblyai.com',
  englishModel: 'universal-streaming-english',
  multilingualModel: 'universal-streaming-multilingual',
  /** The shortest audio message AssemblyAI takes. */
  minChunkMs: 50,
} as const;

interface AssemblyAiEngineOptions {
  apiKey?: string | undefined;
  baseUrl?: string | undefined;
  model?: string | undefined;
  openWebSocket?: OpenWebSocket | undefined;
  timers?: Timers;
  finalGraceMs?: number;
}

/** The v3 streaming URL for one stream. */
function assemblyAiStreamUrl(
  baseUrl: string,
  model: string | undefined,
  options: Pick<SttStreamOptions, 'sampleRate' | 'language' | 'phrases' | 'lineEncoding'>,
): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/v3/ws`);
  const q = url.searchParams;
  q.set('sample_rate', String(options.sampleRate));
  q.set('encoding', options.lineEncoding === 'mulaw' ? 'pcm_mulaw' : 'pcm_s16le');
  const english = options.language.toLowerCase().startsWith('en');
  q.set('speech_model', model ?? (english ? ASSEMBLYAI_DEFAULTS.englishModel : ASSEMBLYAI_DEFAULTS.multilingualModel));
  // Punctuation and casing help the end-of-turn policy read a finished sentence.
  q.set('format_turns', 'true');
  if (options.phrases?.length) q.set('keyterms_prompt', JSON.stringify(options.phrases));
  return url.toString();
}

type Turn = Extract<AssemblyAiMessage, { type: 'Turn' }>;

const wordsOf = (turn: Turn) => turn.words.map((w) => ({ word: w.text, start: w.start / 1000, end: w.end / 1000 }));

class AssemblyAiStream extends StreamingSttStream {
  private readonly encoding: 'mulaw' | 'linear16';
  private readonly minChunkSamples: number;
  private held: Int16Array[] = [];
  private heldSamples = 0;
  /** A turn has words AssemblyAI has not yet ended: finalize() must ask it to. */
  private turnOpen = false;
  /** AssemblyAI ended a turn of this utterance itself (finalize() then need not ask, unless words came since). */
  private turnEnded = false;
  /** The turn_order whose end came unformatted: its formatted copy is still to come. */
  private awaitingCopy: number | null = null;
  /** The turn_order whose formatted copy is still to come but whose words were already taken: it is dropped. */
  private spentCopy: number | null = null;

  constructor(settings: StreamingStreamSettings) {
    super(settings);
    this.encoding = settings.options.lineEncoding ?? 'linear16';
    this.minChunkSamples = (settings.options.sampleRate * ASSEMBLYAI_DEFAULTS.minChunkMs) / 1000;
  }

  protected sendAudio(samples: Int16Array): void {
    this.held.push(samples.slice());
    this.heldSamples += samples.length;
    if (this.heldSamples >= this.minChunkSamples) this.sendHeld();
  }

  /**
   * What is held back (under 50 ms: the pause that ended the turn) stays for the next message, so
   * the audio AssemblyAI gets is exactly the audio pushed, in order, and its times stay ours.
   */
  protected override flushAudio(): void {
    if (this.heldSamples >= this.minChunkSamples) this.sendHeld();
  }

  /**
   * Only when AssemblyAI has itself ended a turn of this utterance and heard no words since: audio
   * it has not read yet may still hold words, and ForceEndpoint is how to have them read.
   */
  protected override settledAlready(): boolean {
    const settled = this.turnEnded && !this.turnOpen;
    this.turnEnded = false;
    return settled;
  }

  override cancel(): void {
    this.turnEnded = false;
    super.cancel();
  }

  /**
   * The utterance's words were taken: a turn AssemblyAI ended is spent with them, so the next finalize() asks for its
   * own words (ForceEndpoint) rather than returning at once, before AssemblyAI has read them. And a turn taken
   * without its formatted copy: the copy adds nothing when it comes.
   */
  protected override utteranceTaken(): void {
    this.turnEnded = false;
    this.spentCopy = this.awaitingCopy;
    this.awaitingCopy = null;
  }

  protected settleMessage(): string {
    return JSON.stringify({ type: 'ForceEndpoint' });
  }

  protected goodbye(): void {
    this.send(JSON.stringify({ type: 'Terminate' }));
  }

  protected message(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return this.heardMalformed('message');
    }
    const error = AssemblyAiErrorSchema.safeParse(json);
    if (error.success) return this.heardError(error.data.error_code);
    const type = (json as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !ASSEMBLYAI_READ_TYPES.includes(type)) return;
    const parsed = AssemblyAiMessageSchema.safeParse(json);
    if (!parsed.success) return this.heardMalformed(`${type} message`);
    if (parsed.data.type === 'Turn') this.turn(parsed.data);
  }

  private turn(turn: Turn): void {
    const words = wordsOf(turn);
    if (!turn.end_of_turn) {
      if (words.length > 0) this.turnOpen = true;
      const guess: SttResult = { text: turn.words.map((w) => w.text).join(' '), words };
      this.heardGuess(guess);
      return;
    }
    if (!turn.turn_is_formatted) {
      // The turn model's verdict comes first; its formatted text follows.
      this.turnOpen = false;
      this.awaitingCopy = turn.turn_order;
      this.heardGuess({ text: turn.transcript, words });
      this.heardTurnEnd(turn.end_of_turn_confidence);
      return;
    }
    if (turn.turn_order === this.spentCopy) {
      this.spentCopy = null;
      return;
    }
    this.awaitingCopy = null;
    this.turnOpen = false;
    this.turnEnded = true;
    this.heardSettled(words.length > 0 ? { text: turn.transcript, words } : { text: turn.transcript });
    this.heardSettledAll();
  }

  private sendHeld(): void {
    const all = new Int16Array(this.heldSamples);
    let at = 0;
    for (const chunk of this.held) {
      all.set(chunk, at);
      at += chunk.length;
    }
    this.held = [];
    this.heldSamples = 0;
    this.send(lineBytes(all, this.encoding));
  }
}

export class AssemblyAiSttEngine implements SttEngine {
  readonly name = 'assemblyai';

  constructor(private readonly config: AssemblyAiEngineOptions) {}

  async open(options: SttStreamOptions): Promise<SttStream> {
    const timers = this.config.timers ?? realTimers;
    // Begin is not awaited: audio sent before it is AssemblyAI's to hold, and a refusal after the upgrade is a close.
    const socket = await openRecogniserSocket('assemblyai', this.config, options, (apiKey) => ({
      url: assemblyAiStreamUrl(this.config.baseUrl ?? ASSEMBLYAI_DEFAULTS.baseUrl, this.config.model, options),
      headers: { authorization: apiKey },
    }));
    return new AssemblyAiStream({
      provider: 'assemblyai',
      socket,
      options,
      timers,
      finalGraceMs: this.config.finalGraceMs ?? STREAMING_STT_DEFAULTS.finalGraceMs,
    });
  }

  /** Streams close with their calls; the engine keeps nothing open. */
  async close(): Promise<void> {}
}
