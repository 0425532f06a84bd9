// The browser call protocol on GET /media/web (documented in docs/browser-protocol.md).
// Binary messages both ways are PCM16 little-endian mono 16 kHz, 20 ms (640 bytes) frames, or,
// when the start asked for `codec: "opus"`, one Opus packet each (20 ms from the server).
// Text messages are JSON, below. The first client message must be `start` with the
// single-use access_token from POST /v2/web-calls, within 5 seconds.
import { z } from 'zod';
import { KEYPAD_DIGIT } from '../../call/caller/keypad.ts';
import type { SessionNotice } from '../../call/transport.ts';

export const WEB_SAMPLE_RATE = 16000;
export const WEB_START_TIMEOUT_MS = 5000;

export const WebCodec = z.enum(['pcm', 'opus']);
export type WebCodec = z.infer<typeof WebCodec>;
/** The agent's voice to a browser in Opus: 24 kbit/s is clear wideband speech (PCM is 256). */
export const WEB_OPUS_BITRATE = 24000;
/** libopus effort for the live voice: 5 costs ~0.1 ms a frame here, 10 (its default) ~0.26 ms. */
export const WEB_OPUS_COMPLEXITY = 5;

export const WebClientMessage = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('start'), access_token: z.string().min(1).max(200), codec: WebCodec.optional() }),
  /** Echo of a server mark once the audio before it has played. */
  z.strictObject({ type: z.literal('mark'), name: z.string().max(100) }),
  z.strictObject({ type: z.literal('dtmf'), digit: z.string().regex(KEYPAD_DIGIT) }),
  z.strictObject({ type: z.literal('hangup') }),
]);
export type WebClientMessage = z.infer<typeof WebClientMessage>;

/** Server → browser: the session's notices (call_started gains the audio rate) plus audio control. */
export type WebServerMessage =
  | Exclude<SessionNotice, { type: 'call_started' }>
  | (Extract<SessionNotice, { type: 'call_started' }> & { sample_rate: number; codec: WebCodec })
  /** Echo this name back once every audio frame received before it has played. */
  | { type: 'mark'; name: string }
  /** Drop queued agent audio now (barge-in) and echo every pending mark. */
  | { type: 'clear' }
  | { type: 'error'; code: string; message: string };
