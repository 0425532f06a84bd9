// The audio toolkit: codecs, PCM helpers, resampling, framing, WAV files.
export { AudioError, type AudioErrorCode } from './errors.ts';
export * from './g711.ts';
export * from './pcm.ts';
export { Resampler, resample, RESAMPLER_DEFAULTS } from './resampler.ts';
export { Framer } from './framer.ts';
export { BandwidthProbe, BANDWIDTH_PROBE_DEFAULTS, type Bandwidth, type BandwidthProbeOptions } from './bandwidth.ts';
export { WavStreamReader } from './wav-stream.ts';
export { decodeWav, encodeWav, readWavFile, writeWavFile, type WavEncoding } from './wav.ts';
export { CarrierAudioIn, CarrierAudioOut, type CarrierAudioOptions, type G711Encoding } from './telephony.ts';
