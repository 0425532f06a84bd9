// A flite worker thread: loads the addon once, keeps voices registered, and speaks one piece of
// text per job, posting audio to the main thread as the vocoder makes it. Everything blocking
// lives here.
import { parentPort, workerData } from 'node:worker_threads';
import { SpeechError } from '../../errors.ts';
import { loadFliteAddon, type FliteAddon } from './addon.ts';
import type { FliteWorkerData, FliteWorkerErrorCode, FromWorker, ToWorker } from './protocol.ts';

const port = parentPort;
if (!port) throw new Error('worker.ts runs only as a worker thread');

// A hand check, not zod: importing zod would add ~0.1 s to every worker's start.
function isWorkerData(data: unknown): data is FliteWorkerData {
  return typeof data === 'object' && data !== null && typeof Reflect.get(data, 'addonPath') === 'string';
}
if (!isWorkerData(workerData)) throw new Error('flite worker started without { addonPath }');
const { addonPath } = workerData;

let addon: FliteAddon | null = null;
let loadError: SpeechError | null = null;
try {
  addon = loadFliteAddon(addonPath);
} catch (err) {
  loadError = err instanceof SpeechError ? err : new SpeechError('TTS_ADDON_MISSING', String(err));
}

const warmed = new Set<string>();
// Never set: warm-up sentences run to their end.
const neverCancel = new Int32Array(new SharedArrayBuffer(4));

function send(msg: FromWorker, transfer?: ArrayBuffer[]): void {
  port?.postMessage(msg, transfer);
}

function fail(jid: number, code: FliteWorkerErrorCode, message: string): void {
  send({ ev: 'error', jid, code, message });
}

function synth(msg: Extract<ToWorker, { op: 'synth' }>): void {
  if (!addon) {
    fail(msg.jid, 'TTS_ADDON_MISSING', loadError?.message ?? 'flite addon not loaded');
    return;
  }
  try {
    const completed = addon.synthesize(msg.voice, msg.text, msg.stretch, msg.cancel, (samples, sampleRate) => {
      // The addon made a fresh buffer for this block: move it, do not copy it.
      send({ ev: 'audio', jid: msg.jid, samples, sampleRate }, [samples.buffer as ArrayBuffer]);
    });
    warmed.add(msg.voice);
    send({ ev: 'done', jid: msg.jid, completed });
  } catch (err) {
    const message = (err as Error).message;
    fail(msg.jid, /unknown voice/.test(message) ? 'TTS_VOICE_UNKNOWN' : 'TTS_SYNTHESIS_FAILED', message);
  }
}

function warm(voice: string): void {
  if (!addon || warmed.has(voice)) return;
  warmed.add(voice);
  try {
    // Registering is cheap; the first synthesis also faults in the voice's data and compiles
    // this path, which a caller should not wait for.
    if (addon.loadVoice(voice)) addon.synthesize(voice, 'Hello.', 1, neverCancel, () => undefined);
  } catch {
    // A voice that cannot speak fails again, with its error, on its first real job.
  }
}

port.on('message', (msg: ToWorker) => {
  switch (msg.op) {
    case 'synth':
      synth(msg);
      return;
    case 'warm':
      warm(msg.voice);
      return;
  }
});
