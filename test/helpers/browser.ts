// Debian's chromium driven by playwright-core (which downloads nothing), with a fake microphone
// that plays a WAV file in a loop, in a fresh profile.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(
  micWav: string,
  options: { allowMicrophone?: boolean } = {},
): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'voicecall-chromium-'));
  const args = [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--use-fake-device-for-media-stream',
    `--use-file-for-fake-audio-capture=${micWav}`,
    // Audio must start without a click on the page's behalf in a test.
    '--autoplay-policy=no-user-gesture-required',
  ];
  // Without the fake UI the permission prompt is dismissed: the page sees a refused microphone.
  if (options.allowMicrophone !== false) args.push('--use-fake-ui-for-media-stream');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args,
    viewport: { width: 1100, height: 760 },
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A mono 16-bit PCM WAV file. */
export function writeWav(path: string, samples: Int16Array, rate: number): void {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  writeFileSync(path, Buffer.concat([header, data]));
}

/** A sine tone, e.g. a stand-in voice for the fake microphone. */
export function tone(hz: number, seconds: number, rate: number, amplitude = 0.3): Int16Array {
  const out = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < out.length; i++)
    out[i] = Math.round(Math.sin((2 * Math.PI * hz * i) / rate) * amplitude * 0x7fff);
  return out;
}
