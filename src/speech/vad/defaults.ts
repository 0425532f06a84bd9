// VAD defaults in one visible place. Reasoning:
// - threshold 0.5 / negative threshold threshold − 0.15: Silero's own defaults, also LiveKit's;
//   the gap is hysteresis so speech is not cut by brief dips inside words.
// - minSpeechMs 100: about three Silero windows. Long enough to ignore clicks, line pops and
//   lone music transients, short enough that a phone "yes" (~250 ms) starts a turn quickly.
//   (Silero's offline default is 250 ms, LiveKit 50 ms, Pipecat 200 ms.)
// - minSilenceMs 200: Pipecat's stop_secs. End of turn is decided by the endpointing layer
//   (agent endpointing_ms, 500 by default), measured from speech_end's boundary time, so the
//   VAD only needs to bridge pauses between words.
export const VAD_DEFAULTS = {
  threshold: 0.5,
  negativeThresholdOffset: 0.15,
  minSpeechMs: 100,
  minSilenceMs: 200,
} as const;

/** Silero v5 window and context sizes per sample rate. */
export const SILERO_WINDOWS = {
  8000: { window: 256, context: 32 },
  16000: { window: 512, context: 64 },
} as const;
