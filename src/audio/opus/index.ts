// Opus: the codec (libopus through @discordjs/opus), Ogg Opus pages, recordings as Ogg Opus.
export { OpusCodec, opusAvailable, OPUS_FRAME_MS, OPUS_RATES, type OpusCodecOptions } from './codec.ts';
export { OggOpusMuxer, oggCrc, opusPacketSamples, OPUS_PRE_SKIP, type OggOpusOptions } from './ogg.ts';
export { oggOpusRecording } from './recording.ts';
