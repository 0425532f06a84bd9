// Incremental reader for a PCM16 WAV arriving over a pipe or HTTP body (espeak-ng --stdout, an
// OpenAI-compatible speech endpoint with response_format "wav"). Such streams carry placeholder
// sizes in their header, so sizes are ignored: everything after the data chunk header is audio.
// Files use wav.ts (wavefile) instead.
import { AudioError } from './errors.ts';

export class WavStreamReader {
  private header: Uint8Array = new Uint8Array(0);
  private rate = 0;
  private inData = false;
  /** A byte left over when a chunk ends in the middle of a sample. */
  private oddByte = -1;

  /** Sample rate from the fmt chunk; 0 until the header has been read. */
  get sampleRate(): number {
    return this.rate;
  }

  /** Feed bytes; returns the samples they complete (empty while the header is still coming). */
  push(bytes: Uint8Array): Int16Array {
    if (!this.inData) {
      const joined = new Uint8Array(this.header.length + bytes.length);
      joined.set(this.header);
      joined.set(bytes, this.header.length);
      const dataStart = this.parseHeader(joined);
      if (dataStart < 0) {
        this.header = joined;
        return new Int16Array(0);
      }
      this.inData = true;
      this.header = new Uint8Array(0);
      bytes = joined.subarray(dataStart);
    }
    return this.samplesOf(bytes);
  }

  private samplesOf(bytes: Uint8Array): Int16Array {
    let offset = 0;
    const total = bytes.length + (this.oddByte >= 0 ? 1 : 0);
    const out = new Int16Array(total >> 1);
    let n = 0;
    if (this.oddByte >= 0 && bytes.length > 0) {
      out[n++] = (((bytes[0]! << 8) | this.oddByte) << 16) >> 16;
      offset = 1;
      this.oddByte = -1;
    }
    for (; offset + 1 < bytes.length; offset += 2)
      out[n++] = (((bytes[offset + 1]! << 8) | bytes[offset]!) << 16) >> 16;
    if (offset < bytes.length) this.oddByte = bytes[offset]!;
    return n === out.length ? out : out.subarray(0, n);
  }

  /** Offset of the first audio byte, or -1 when more header bytes are needed. */
  private parseHeader(bytes: Uint8Array): number {
    if (bytes.length < 12) return -1;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const tag = (at: number) => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
    if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new AudioError('AUDIO_BAD_WAV', 'stream is not a RIFF/WAVE file');
    let at = 12;
    while (at + 8 <= bytes.length) {
      const id = tag(at);
      const size = view.getUint32(at + 4, true);
      if (id === 'data') {
        if (this.rate === 0) throw new AudioError('AUDIO_BAD_WAV', 'WAV stream has audio before its fmt chunk');
        return at + 8;
      }
      if (at + 8 + size > bytes.length) return -1;
      if (id === 'fmt ') {
        const format = view.getUint16(at + 8, true);
        const channels = view.getUint16(at + 10, true);
        const bits = view.getUint16(at + 22, true);
        if ((format !== 1 && format !== 0xfffe) || channels !== 1 || bits !== 16) {
          throw new AudioError(
            'AUDIO_BAD_WAV',
            `WAV stream must be PCM16 mono (format ${format}, ${channels} channels, ${bits} bits)`,
          );
        }
        this.rate = view.getUint32(at + 12, true);
      }
      at += 8 + size + (size % 2);
    }
    return -1;
  }
}
