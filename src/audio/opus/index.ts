// Opus: the codec (libopus through @discordjs/opus), Ogg Opus pages, recordings as Ogg Opus.
export { OpusCodec, opusAvailable } from './codec.ts';
export { oggCrc, opusPacketSamples, OPUS_PRE_SKIP } from './ogg.ts';
export { oggOpusRecording } from './recording.ts';
