/** Bits per second of a recording's Ogg Opus: 16 kbit/s a channel is clear speech at 8 and 16 kHz. */
export const OGG_RECORDING_BITRATE = 32000;

export type FromOggWorker =
  { type: 'bytes'; bytes: Uint8Array } | { type: 'done' } | { type: 'error'; message: string };
