// npm run bench: every per-frame and per-token hot path, one module after another (each runs
// on import and prints its table). Numbers from a shared machine: read medians and ratios.
console.log('## Audio: G.711, resampling, VAD (bench/audio.bench.ts)');
await import('./audio.bench.ts');
console.log('\n## TTS first audio and cancel per voice (bench/tts.bench.ts)');
await import('./tts.bench.ts');
console.log('\n## Model stream: SSE parse + speakable chunking (bench/llm.bench.ts)');
await import('./llm.bench.ts');
console.log('\n## Transport and session per frame (bench/frame.bench.ts)');
await import('./frame.bench.ts');
