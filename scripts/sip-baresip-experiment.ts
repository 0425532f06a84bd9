// Experiment, not a test: Debian's baresip calls a minimal SIP listener built from the pieces in
// src/carriers/sip/ (message reading, SDP answer, RTP port, endpoint, receiver, sender), plays a
// WAV file as its microphone, and records what it hears. The listener answers, receives the
// caller's RTP into the depacketizer and jitter buffer, sends a tone back, and hangs up after a
// few seconds; then it writes what it heard to a WAV file and prints what it counted. The next
// session turns it into the end-to-end test; docs/sip-notes.md says how to run it.
//
//   node --import tsx scripts/sip-baresip-experiment.ts /tmp/sipx
//
// It writes into that folder baresip's config (baresip/), the WAV baresip plays (in.wav: 1 s of
// 440 Hz, 1 s of silence, 1 s of 880 Hz, 3 s of silence, 8 kHz mono 16-bit, which aufile needs),
// and received.wav; baresip's sndfile module records both directions into rec/.
import { spawn } from 'node:child_process';
import { createSocket, type RemoteInfo } from 'node:dgram';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeWav } from '../src/audio/wav.ts';
import { rms } from '../src/audio/pcm.ts';
import {
  header,
  parseSipMessage,
  responseTo,
  serializeSipMessage,
  type SipRequest,
} from '../src/carriers/sip/message.ts';
import { RtpEndpoint } from '../src/carriers/sip/rtp-endpoint.ts';
import { RtpPortPool } from '../src/carriers/sip/rtp-ports.ts';
import { RtpReceiver } from '../src/carriers/sip/rtp-receiver.ts';
import { RtpSender } from '../src/carriers/sip/rtp-sender.ts';
import { answerOffer } from '../src/carriers/sip/sdp.ts';
import { realTimers } from '../src/timers.ts';

const dir = process.argv[2] ?? '/tmp/sipx';
const HOST = '127.0.0.1';
const SIP_PORT = 5090;
const CALL_MS = 4000;

/** baresip's config: auto-answer, audio from a file, recording by sndfile, console keys over UDP. */
const BARESIP_CONFIG = `poll_method\tepoll
sip_listen\t${HOST}:5070
net_interface\t${HOST}
audio_player\talsa,null
audio_source\taufile,${join(dir, 'in.wav')}
audio_alert\talsa,null
ausrc_srate\t8000
auplay_srate\t8000
ausrc_channels\t1
auplay_channels\t1
rtp_ports\t10000-10100
module_path\t/usr/lib/baresip/modules
module\tg711.so
module\taufile.so
module\talsa.so
module\tsndfile.so
module\tcons.so
module_app\taccount.so
module_app\tmenu.so
snd_path\t${join(dir, 'rec')}
cons_listen\t${HOST}:5555
`;
const BARESIP_ACCOUNT = `<sip:baresip@${HOST}:5070>;regint=0;answermode=auto;audio_codecs=PCMU,PCMA\n`;

function writeBaresipFiles(): void {
  mkdirSync(join(dir, 'baresip'), { recursive: true });
  mkdirSync(join(dir, 'rec'), { recursive: true });
  writeFileSync(join(dir, 'baresip', 'config'), BARESIP_CONFIG);
  writeFileSync(join(dir, 'baresip', 'accounts'), BARESIP_ACCOUNT);
  writeFileSync(join(dir, 'baresip', 'contacts'), '');
  const samples = Int16Array.from({ length: 6 * 8000 }, (_, i) => {
    const t = i / 8000;
    const f = t < 1 ? 440 : t >= 2 && t < 3 ? 880 : 0;
    return f === 0 ? 0 : Math.round(8000 * Math.sin(2 * Math.PI * f * t));
  });
  writeFileSync(join(dir, 'in.wav'), encodeWav({ samples, sampleRate: 8000 }));
}

const heard: Int16Array[] = [];
let concealed = 0;
const digits: string[] = [];

const sip = createSocket('udp4');
const pool = new RtpPortPool({ low: 47300, high: 47399 }, HOST);

function send(payload: Buffer, to: RemoteInfo): void {
  sip.send(payload, to.port, to.address);
}

async function answer(invite: SipRequest, from: RemoteInfo): Promise<void> {
  const toTag = Math.random().toString(36).slice(2, 10);
  send(serializeSipMessage(responseTo(invite, 100, 'Trying')), from);
  const bound = await pool.bind();
  const { answer: sdp, media } = answerOffer(invite.body, {
    address: HOST,
    port: bound.port,
    sessionId: String(Date.now()),
    sessionVersion: 1,
  });
  console.log('negotiated', media.codec.name, 'telephone-event', media.telephoneEventType, 'remote', media.remote);
  const receiver = new RtpReceiver({
    codec: media.codec,
    payloadType: media.payloadType,
    telephoneEventType: media.telephoneEventType,
    timers: realTimers,
    onFrame: (frame, wasConcealed) => {
      heard.push(Int16Array.from(frame));
      if (wasConcealed) concealed++;
    },
    onDigit: (key) => digits.push(key),
  });
  const endpoint = new RtpEndpoint({
    socket: bound.socket,
    timers: realTimers,
    onPacket: (packet) => receiver.receive(packet),
    onMediaTimeout: () => console.log('media timeout'),
  });
  endpoint.setRemote(media.remote);
  const ok = responseTo(invite, 200, 'OK', {
    toTag,
    headers: [
      { name: 'contact', value: `<sip:agent@${HOST}:${SIP_PORT}>` },
      { name: 'content-type', value: 'application/sdp' },
    ],
    body: sdp,
  });
  send(serializeSipMessage(ok), from);
  // The agent's side: a 660 Hz tone, 20 ms a packet, paced by the wall clock.
  const sender = new RtpSender({
    codec: media.codec,
    payloadType: media.payloadType,
    telephoneEventType: media.telephoneEventType,
    ssrc: 0x5ca1ab1e,
    sequence: 1,
    timestamp: 0,
    now: () => performance.now(),
  });
  let n = 0;
  const tone = setInterval(() => {
    const frame = Int16Array.from({ length: 160 }, (_, i) =>
      Math.round(6000 * Math.sin((2 * Math.PI * 660 * (n * 160 + i)) / 8000)),
    );
    n++;
    const packet = sender.audio(frame);
    if (packet) endpoint.send(packet);
  }, 20);
  // Keys pressed on the phone: baresip's cons module takes each datagram as typed keys, and in a call
  // a digit key sends it as an RFC 4733 telephone event.
  const keys = createSocket('udp4');
  setTimeout(() => {
    for (const [i, key] of [...'12#'].entries()) setTimeout(() => keys.send(key, 5555, HOST), i * 300);
    setTimeout(() => keys.close(), 1200);
  }, 2500);
  setTimeout(() => {
    clearInterval(tone);
    const bye: SipRequest = {
      kind: 'request',
      method: 'BYE',
      uri: header(invite, 'contact')!.replace(/^.*<|>.*$/g, ''),
      headers: [
        { name: 'via', value: `SIP/2.0/UDP ${HOST}:${SIP_PORT};branch=z9hG4bK${Date.now()}` },
        { name: 'from', value: ok.headers.find((h) => h.name === 'to')!.value },
        { name: 'to', value: header(invite, 'from')! },
        { name: 'call-id', value: header(invite, 'call-id')! },
        { name: 'cseq', value: '1 BYE' },
        { name: 'max-forwards', value: '70' },
      ],
      body: '',
    };
    send(serializeSipMessage(bye), from);
    setTimeout(() => {
      endpoint.close();
      receiver.close();
      bound.release();
      finish(endpoint.stats, receiver.jitterStats);
    }, 500);
  }, CALL_MS);
}

function finish(rtp: RtpEndpoint['stats'], jitter: RtpReceiver['jitterStats']): void {
  const samples = Int16Array.from(heard.flatMap((f) => [...f]));
  writeFileSync(join(dir, 'received.wav'), encodeWav({ samples, sampleRate: 8000 }));
  console.log('rtp', rtp, 'jitter', jitter, 'frames', heard.length, 'concealed', concealed, 'digits', digits);
  console.log('received rms', rms(samples).toFixed(0), 'written', join(dir, 'received.wav'));
  sip.close();
}

sip.on('message', (datagram, from) => {
  const parsed = parseSipMessage(datagram);
  if (!parsed.ok) return console.log('refused:', parsed.reason);
  const m = parsed.message;
  console.log('<', m.kind === 'request' ? `${m.method} ${m.uri}` : `${m.status} ${m.reason}`);
  if (m.kind !== 'request') return;
  if (m.method === 'INVITE') void answer(m, from);
  else if (m.method === 'BYE') send(serializeSipMessage(responseTo(m, 200, 'OK')), from);
});

sip.bind(SIP_PORT, HOST, () => {
  writeBaresipFiles();
  const baresip = spawn(
    'baresip',
    ['-f', join(dir, 'baresip'), '-e', `/dial sip:+15550001@${HOST}:${SIP_PORT}`, '-t', String(CALL_MS / 1000 + 3)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  baresip.stdout.on('data', (d: Buffer) => process.stdout.write(`[baresip] ${d.toString()}`));
  baresip.on('exit', (code) => {
    console.log('baresip exited', code, 'recordings', readdirSync(join(dir, 'rec')));
  });
});
