// Frame-level VAD measurement: speech segments from the events against per-frame labels.
import { dbfs, samplesPerFrame } from '../../../src/audio/pcm.ts';
import type { VadEvent, VadStream } from '../../../src/speech/types.ts';

/** Run a stream over a signal in 20 ms frames; returns speech segments [start, end) in seconds. */
export async function segmentsOf(
  stream: VadStream,
  samples: Int16Array,
  sampleRate: number,
): Promise<Array<[number, number]>> {
  const frame = samplesPerFrame(sampleRate);
  const events: VadEvent[] = [];
  for (let offset = 0; offset < samples.length; offset += frame)
    events.push(...(await stream.push(samples.subarray(offset, offset + frame))));
  const segments: Array<[number, number]> = [];
  let open = -1;
  for (const event of events) {
    if (event.type === 'speech_start') open = event.at;
    else if (open >= 0) {
      segments.push([open, event.at]);
      open = -1;
    }
  }
  if (open >= 0) segments.push([open, samples.length / sampleRate]);
  return segments;
}

/** Per 20 ms frame: true when its level is above `floorDbfs` (speech in clean synthetic audio). */
export function energyLabels(samples: Int16Array, sampleRate: number, floorDbfs = -40): boolean[] {
  const frame = samplesPerFrame(sampleRate);
  const labels: boolean[] = [];
  for (let offset = 0; offset + frame <= samples.length; offset += frame)
    labels.push(dbfs(samples.subarray(offset, offset + frame)) > floorDbfs);
  return labels;
}

/** Per 20 ms frame: true when the frame's centre lies inside a segment. */
export function framesInSegments(segments: Array<[number, number]>, frames: number): boolean[] {
  const out: boolean[] = [];
  for (let i = 0; i < frames; i++) {
    const centre = (i + 0.5) * 0.02;
    out.push(segments.some(([start, end]) => centre >= start && centre < end));
  }
  return out;
}
