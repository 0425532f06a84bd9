// Opus on the page through WebCodecs: the caller's 20 ms frames are encoded before they are sent
// and the agent's packets decoded before they are played (one packet per socket message both
// ways). Used where the browser has WebCodecs Opus both ways and the server offers it (the
// `codecs` of POST /v2/web-calls); otherwise the page stays PCM.

const ENCODER_CONFIG = { codec: 'opus', sampleRate: 16000, numberOfChannels: 1, bitrate: 24000, opus: { frameDuration: 20000 } };
const DECODER_CONFIG = { codec: 'opus', sampleRate: 16000, numberOfChannels: 1 };
const FRAME_US = 20000;

export async function opusSupported() {
  if (typeof AudioEncoder === 'undefined' || typeof AudioDecoder === 'undefined') return false;
  try {
    const [encoder, decoder] = await Promise.all([AudioEncoder.isConfigSupported(ENCODER_CONFIG), AudioDecoder.isConfigSupported(DECODER_CONFIG)]);
    return encoder.supported === true && decoder.supported === true;
  } catch {
    return false;
  }
}

export class OpusLink {
  /**
   * @param {(packet: ArrayBuffer) => void} send one packet to the server
   * @param {(message: object, transfer?: Transferable[]) => void} play a message for the playback worklet
   * @param {(error: Error) => void} fail
   */
  constructor(send, play, fail) {
    this.play = play;
    this.fail = fail;
    this.sentUs = 0;
    this.receivedUs = 0;
    this.rate = 0;
    // Marks wait behind the packets before them: a decoder's output comes later, asynchronously.
    this.waitingMarks = [];
    this.generation = 0;
    this.encoder = new AudioEncoder({
      output: (chunk) => {
        const packet = new ArrayBuffer(chunk.byteLength);
        chunk.copyTo(packet);
        send(packet);
      },
      error: fail,
    });
    this.encoder.configure(ENCODER_CONFIG);
    this.decoder = this.newDecoder();
  }

  newDecoder() {
    const decoder = new AudioDecoder({ output: (data) => this.decoded(data), error: this.fail });
    decoder.configure(DECODER_CONFIG);
    return decoder;
  }

  /** One 20 ms frame of 16 kHz PCM16 from the capture worklet. */
  encode(pcm) {
    if (this.encoder.state !== 'configured') return;
    const data = new AudioData({ format: 's16', sampleRate: 16000, numberOfFrames: pcm.byteLength / 2, numberOfChannels: 1, timestamp: this.sentUs, data: pcm });
    this.sentUs += FRAME_US;
    this.encoder.encode(data);
    data.close();
  }

  decode(packet) {
    if (this.decoder.state !== 'configured') return;
    // Every Opus packet stands alone (no inter-frame prediction to restart from): each is a key chunk.
    this.decoder.decode(new EncodedAudioChunk({ type: 'key', timestamp: this.receivedUs, data: packet }));
    this.receivedUs += FRAME_US;
  }

  decoded(data) {
    // Chromium decodes Opus at 48 kHz whatever rate is asked for: the worklet is told the rate.
    if (data.sampleRate !== this.rate) {
      this.rate = data.sampleRate;
      this.play({ type: 'rate', rate: data.sampleRate });
    }
    const floats = new Float32Array(data.numberOfFrames);
    data.copyTo(floats, { planeIndex: 0, format: 'f32-planar' });
    data.close();
    const pcm = new Int16Array(floats.length);
    for (let i = 0; i < floats.length; i++) {
      const s = Math.max(-1, Math.min(1, floats[i]));
      pcm[i] = s < 0 ? s * 0x8000 : s * 0x7fff;
    }
    this.play({ type: 'audio', pcm: pcm.buffer }, [pcm.buffer]);
  }

  /** A server mark goes to the worklet once every packet received before it has been decoded. */
  mark(name) {
    this.waitingMarks.push(name);
    const generation = this.generation;
    this.decoder.flush().then(
      () => {
        if (generation === this.generation) this.play({ type: 'mark', name: this.waitingMarks.shift() });
      },
      () => undefined, // reset by clear(), which passed the mark on itself
    );
  }

  /** Barge-in: drop what is being decoded; marks still waiting go to the worklet first, to be echoed by its clear. */
  clear() {
    this.generation++;
    for (const name of this.waitingMarks.splice(0)) this.play({ type: 'mark', name });
    this.play({ type: 'clear' });
    this.decoder.reset();
    this.decoder.configure(DECODER_CONFIG);
  }

  close() {
    for (const codec of [this.encoder, this.decoder]) {
      if (codec.state !== 'closed') codec.close();
    }
  }
}
