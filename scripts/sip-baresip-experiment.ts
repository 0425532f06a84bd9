// Experiment, not a test: Debian's baresip calls a minimal SIP listener built from the pieces in
// src/carriers/sip/ (message reading, SDP answer, RTP port, endpoint, receiver, sender), plays a
// WAV file as its microphone, and records what it hears. The listener answers, receives the
// caller's RTP into the depacketizer and jitter buffer, sends a tone back, and hangs up after a
// few seconds; then it writes what it heard to a WAV file and prints what it counted. The next
// session turns it into the end-to-end test; docs/sip-notes.md says how to run it.
//
//   node --import tsx scripts/sip-baresip-experiment.ts /tmp/sipx            (baresip calls in)
//   node --import tsx scripts/sip-baresip-experiment.ts /tmp/sipx outbound   (this side calls baresip)
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
  type SipHeader,
  type SipRequest,
  type SipResponse,
} from '../src/carriers/sip/message.ts';
import { RtpEndpoint } from '../src/carriers/sip/rtp-endpoint.ts';
import { RtpPortPool, type BoundRtpPort } from '../src/carriers/sip/rtp-ports.ts';
import { RtpReceiver } from '../src/carriers/sip/rtp-receiver.ts';
import { RtpSender } from '../src/carriers/sip/rtp-sender.ts';
import { answerOffer, createOffer, readAnswer, type NegotiatedMedia } from '../src/carriers/sip/sdp.ts';
import { realTimers } from '../src/timers.ts';

const dir = process.argv[2] ?? '/tmp/sipx';
/** `outbound`: this side calls baresip, instead of baresip calling in. */
const outbound = process.argv[3] === 'outbound';
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

/** The call's media on a bound port: caller audio and digits in, a 660 Hz tone out; returns its stop. */
function startMedia(media: NegotiatedMedia, bound: BoundRtpPort): () => void {
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
  return () => {
    clearInterval(tone);
    setTimeout(() => {
      endpoint.close();
      receiver.close();
      bound.release();
      finish(endpoint.stats, receiver.jitterStats);
    }, 500);
  };
}

/** A BYE within the dialog `callId`, from `from` (this side's party with its tag) to `to`. */
function bye(uri: string, from: string, to: string, callId: string): Buffer {
  return serializeSipMessage({
    kind: 'request',
    method: 'BYE',
    uri,
    headers: [
      { name: 'via', value: `SIP/2.0/UDP ${HOST}:${SIP_PORT};branch=z9hG4bK${Date.now()}` },
      { name: 'from', value: from },
      { name: 'to', value: to },
      { name: 'call-id', value: callId },
      { name: 'cseq', value: '2 BYE' },
      { name: 'max-forwards', value: '70' },
    ],
    body: '',
  });
}

/** baresip calls in: 100, then 200 with the SDP answer; this side hangs up after CALL_MS. */
async function answer(invite: SipRequest, from: RemoteInfo): Promise<void> {
  send(serializeSipMessage(responseTo(invite, 100, 'Trying')), from);
  const bound = await pool.bind();
  const { answer: sdp, media } = answerOffer(invite.body, { ...localMedia, port: bound.port });
  const stop = startMedia(media, bound);
  const ok = responseTo(invite, 200, 'OK', {
    toTag: 'agent1',
    headers: [
      { name: 'contact', value: `<sip:agent@${HOST}:${SIP_PORT}>` },
      { name: 'content-type', value: 'application/sdp' },
    ],
    body: sdp,
  });
  send(serializeSipMessage(ok), from);
  setTimeout(() => {
    stop();
    const contact = header(invite, 'contact')!.replace(/^.*<|>.*$/g, '');
    send(bye(contact, header(ok, 'to')!, header(invite, 'from')!, header(invite, 'call-id')!), from);
  }, CALL_MS);
}

/** This side calls baresip (it answers by itself): INVITE with the SDP offer, ACK on 200, BYE after CALL_MS. */
async function dial(): Promise<void> {
  const bound = await pool.bind();
  const callId = `experiment-${Date.now()}@${HOST}`;
  const fromValue = `<sip:+15550001@${HOST}:${SIP_PORT}>;tag=agent1`;
  const baresip = { address: HOST, port: 5070, family: 'IPv4' as const, size: 0 };
  const dialog = (method: string, cseq: number, to: string, body = '', extra: SipHeader[] = []): Buffer =>
    serializeSipMessage({
      kind: 'request',
      method,
      uri: `sip:baresip@${HOST}:5070`,
      headers: [
        { name: 'via', value: `SIP/2.0/UDP ${HOST}:${SIP_PORT};branch=z9hG4bK${method}${Date.now()}` },
        { name: 'from', value: fromValue },
        { name: 'to', value: to },
        { name: 'call-id', value: callId },
        { name: 'cseq', value: `${cseq} ${method}` },
        { name: 'max-forwards', value: '70' },
        { name: 'contact', value: `<sip:agent@${HOST}:${SIP_PORT}>` },
        ...extra,
      ],
      body,
    });
  const offer = createOffer({ ...localMedia, port: bound.port });
  onResponse = (response) => {
    if (response.status < 200) return;
    onResponse = () => {};
    const to = header(response, 'to')!;
    send(dialog('ACK', 1, to), baresip);
    if (response.status >= 300) return bound.release();
    const stop = startMedia(readAnswer(response.body), bound);
    setTimeout(() => {
      stop();
      send(dialog('BYE', 2, to), baresip);
    }, CALL_MS);
  };
  send(
    dialog('INVITE', 1, `<sip:baresip@${HOST}:5070>`, offer, [{ name: 'content-type', value: 'application/sdp' }]),
    baresip,
  );
}

let onResponse: (response: SipResponse) => void = () => {};
const localMedia = { address: HOST, sessionId: String(Date.now()), sessionVersion: 1 };

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
  if (m.kind !== 'request') return onResponse(m);
  if (m.method === 'INVITE') void answer(m, from);
  else if (m.method === 'BYE') send(serializeSipMessage(responseTo(m, 200, 'OK')), from);
});

sip.bind(SIP_PORT, HOST, () => {
  writeBaresipFiles();
  const dialIn = ['-e', `/dial sip:+15550001@${HOST}:${SIP_PORT}`];
  const args = ['-f', join(dir, 'baresip'), ...(outbound ? [] : dialIn), '-t', String(CALL_MS / 1000 + 3)];
  const baresip = spawn('baresip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // Called: baresip answers by itself (answermode=auto) once it is ready.
  if (outbound) setTimeout(() => void dial(), 1000);
  baresip.stdout.on('data', (d: Buffer) => process.stdout.write(`[baresip] ${d.toString()}`));
  baresip.on('exit', (code) => {
    console.log('baresip exited', code, 'recordings', readdirSync(join(dir, 'rec')));
  });
});
