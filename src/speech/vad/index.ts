export { VAD_DEFAULTS, SILERO_WINDOWS } from './defaults.ts';
export { SpeechSegmenter, type SegmenterSettings } from './segmenter.ts';
export { SileroVadEngine, SileroVadStream, resolveVadOptions, sileroModelPath, type SileroVadEngineOptions, type VadSettings } from './silero.ts';
