// AssemblyAI's Universal-Streaming protocol (v3), as its documentation gives it; the shapes this
// service relies on, checked with zod on every message.
//
// Connect: wss://streaming.assemblyai.com/v3/ws?sample_rate=8000&encoding=pcm_mulaw&speech_model=…
//   &format_turns=true&keyterms_prompt=["Okonkwo","Zendrix Telecom"]
//   header  Authorization: <API key>   (or a temporary token as ?token=)
//   encoding: pcm_s16le (default) or pcm_mulaw; sample_rate required.
// Client → server: binary audio "between 50 ms and 1000 ms in length" per message, and text frames
//   {"type": "ForceEndpoint"}   end the current turn now
//   {"type": "Terminate"}       end the session; in-flight Turns, then Termination, then close 1000
// Server → client:
//   {"type": "Begin", "id": "de5d9927-73a6-4be8-b52d-b4c07be37e6b", "expires_at": 1759796682}
//   {"turn_order": 0, "turn_is_formatted": false, "end_of_turn": false, "transcript": "hi",
//    "end_of_turn_confidence": 1.4e-5, "words": [{"start": 1920, "end": 2000, "text": "hi",
//    "confidence": 0.87, "word_is_final": true}, …], "utterance": "", "type": "Turn"}
//      transcript: the turn's finalized words so far; words also holds the guesses (word_is_final
//      false); times in ms of the audio sent. end_of_turn: the turn model ended the turn (with
//      end_of_turn_confidence); with format_turns the ended turn comes again, turn_is_formatted true
//      (the same turn_order; its API reference shows that copy's words without word_is_final).
//   {"type": "Termination", "audio_duration_seconds": 10, "session_duration_seconds": 10}
//   {"type": "Error", "error_code": 3008, "error": "Session Expired: Maximum session duration exceeded"}
//      sent just before the server closes the socket with that code.
import { z } from 'zod';

const AssemblyAiBeginSchema = z.object({
  type: z.literal('Begin'),
  id: z.string(),
  expires_at: z.number(),
});

const AssemblyAiWordSchema = z.object({
  start: z.number(),
  end: z.number(),
  text: z.string(),
  confidence: z.number().optional(),
  word_is_final: z.boolean().optional(),
});

const AssemblyAiTurnSchema = z.object({
  type: z.literal('Turn'),
  turn_order: z.number(),
  turn_is_formatted: z.boolean(),
  end_of_turn: z.boolean(),
  transcript: z.string(),
  end_of_turn_confidence: z.number(),
  words: z.array(AssemblyAiWordSchema).default([]),
  utterance: z.string().optional(),
});

const AssemblyAiTerminationSchema = z.object({
  type: z.literal('Termination'),
  audio_duration_seconds: z.number().optional(),
  session_duration_seconds: z.number().optional(),
});

export const AssemblyAiErrorSchema = z.object({
  type: z.literal('Error').optional(),
  error_code: z.number().optional(),
  error: z.string(),
});

export const AssemblyAiMessageSchema = z.discriminatedUnion('type', [
  AssemblyAiBeginSchema,
  AssemblyAiTurnSchema,
  AssemblyAiTerminationSchema,
]);
export type AssemblyAiMessage = z.infer<typeof AssemblyAiMessageSchema>;

/** Text frames the client sends. */
export const AssemblyAiControlSchema = z.object({
  type: z.enum(['ForceEndpoint', 'Terminate', 'KeepAlive', 'UpdateConfiguration']),
});

/** The message types the stream reads; a message of another type (SpeechStarted, a newer event) is not checked. */
export const ASSEMBLYAI_READ_TYPES: readonly string[] = ['Begin', 'Turn', 'Termination'];
