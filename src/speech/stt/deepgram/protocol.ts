// Deepgram's live transcription protocol (GET /v1/listen upgraded to a WebSocket), as its
// documentation gives it; the shapes this service relies on, checked with zod on every message.
//
// Connect: wss://api.deepgram.com/v1/listen?model=nova-3&language=en-US&encoding=mulaw&sample_rate=8000
//   &channels=1&interim_results=true&endpointing=300&utterance_end_ms=1000&punctuate=true&keyterm=…
//   header  Authorization: token <DEEPGRAM_API_KEY>
// Client → server: binary audio (raw, the encoding and rate named above), and text frames
//   {"type": "KeepAlive"}     at least every 10 s without audio, or the stream closes (NET-0001)
//   {"type": "Finalize"}      "process all remaining audio data and return the final results";
//                             the answer has "from_finalize": true
//   {"type": "CloseStream"}   finish, send a Metadata summary, close
// Server → client:
//   {"type": "Results", "channel_index": [0, 1], "duration": 1.98, "start": 5.99, "is_final": true,
//    "speech_final": true, "channel": {"alternatives": [{"transcript": "Tell me more about this.",
//    "confidence": 0.99, "words": [{"word": "tell", "start": 6.07, "end": 6.35, "confidence": 0.99,
//    "punctuated_word": "Tell"}, …]}]}, "metadata": {…}, "from_finalize": false}
//      is_final: this span's words will not change; speech_final: endpointing heard the pause that
//      ends the speech; start/duration and the words' times are seconds of the audio sent.
//   {"type": "UtteranceEnd", "channel": [0, 1], "last_word_end": 2.395}
//      a gap of utterance_end_ms after the last word (needs interim_results)
//   {"type": "Metadata", "request_id": "…", "sha256": "…", "created": "…", "duration": 0.0, "channels": 0, …}
//   {"type": "SpeechStarted", …} (with vad_events; not asked for)
// Errors: a refused upgrade is an HTTP status (401 for a wrong key); a failure mid-stream closes
// the socket with a close frame (1008 for undecodable audio, DATA-0000; 1011 NET-0000/NET-0001).
import { z } from 'zod';

const DeepgramWordSchema = z.object({
  word: z.string(),
  start: z.number(),
  end: z.number(),
  confidence: z.number().optional(),
  punctuated_word: z.string().optional(),
});

export const DeepgramResultsSchema = z.object({
  type: z.literal('Results'),
  channel_index: z.array(z.number()).optional(),
  duration: z.number(),
  start: z.number(),
  is_final: z.boolean().default(false),
  speech_final: z.boolean().default(false),
  from_finalize: z.boolean().default(false),
  channel: z.object({
    alternatives: z.array(
      z.object({
        transcript: z.string(),
        confidence: z.number().optional(),
        words: z.array(DeepgramWordSchema).default([]),
      }),
    ),
  }),
});

const DeepgramUtteranceEndSchema = z.object({
  type: z.literal('UtteranceEnd'),
  channel: z.array(z.number()).optional(),
  last_word_end: z.number(),
});

const DeepgramMetadataSchema = z.object({
  type: z.literal('Metadata'),
  request_id: z.string(),
  duration: z.number().optional(),
  channels: z.number().optional(),
});

/** Messages the stream acts on; any other type (SpeechStarted, a newer event) is let pass. */
export const DeepgramMessageSchema = z.discriminatedUnion('type', [
  DeepgramResultsSchema,
  DeepgramUtteranceEndSchema,
  DeepgramMetadataSchema,
]);
export type DeepgramMessage = z.infer<typeof DeepgramMessageSchema>;

/** Text frames the client sends. */
export const DeepgramControlSchema = z.object({
  type: z.enum(['KeepAlive', 'Finalize', 'CloseStream']),
});

/** The message types the stream reads; a message of another type is not checked. */
export const DEEPGRAM_READ_TYPES: readonly string[] = ['Results', 'UtteranceEnd', 'Metadata'];
