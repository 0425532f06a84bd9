// SIP trunks under the carrier conformance suite. The trunk's far side is a SIP phone on the project's own user agent
// (src/carriers/sip/user-agent.ts) listening on 127.0.0.1: the service's INVITEs reach it through the trunk's
// outbound side, and it calls the service's SIP_LISTEN address as a trunk's caller does. Its answering phones run
// the suite's scripts as the simulated phones do (SimCallee on a TwilioStreamCaller): each call's RtpLine carries
// the phone's 20 ms μ-law frames out as RTP, its keys as RFC 4733 events (SipTransport.sendDigits), its hang-up as
// BYE, and plays the agent's RTP to it. RTP has no marks, so the line marks the agent's utterances itself: one
// starts at the first loud frame and ends after a stretch of quiet, which is what wait_for_agent listens for.
// The busy number is answered 486 and the unanswered one only rings (180) until the service CANCELs, both on a
// transaction layer of their own beside the user agent (which answers every INVITE it admits).
// A cold transfer is the service's REFER in the phone's call: the phone answers 202, NOTIFYs 100 Trying, calls the
// Refer-To URI (the trunk's outbound address, so its own desk phone answers), NOTIFYs how that went, and after a
// 200 hangs its leg with the service up, as a phone that transferred its caller does. Not here: media-stream
// secrets (SIP carries media on RTP, not a WebSocket); conformance.ts's CarrierDriver says so where the cases are
// chosen.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import { muLawDecode, muLawEncode } from '../../../src/audio/g711.ts';
import { cryptoRandomHex } from '../../../src/clock.ts';
import { SimCallee } from '../../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimScript } from '../../../src/carriers/sim/script.ts';
import { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { parseSipUri, peerOf, uriOf } from '../../../src/carriers/sip/dialog.ts';
import { header, type SipMessage } from '../../../src/carriers/sip/message.ts';
import { RtpPortPool } from '../../../src/carriers/sip/rtp-ports.ts';
import {
  InviteServerTransaction,
  SipTransactionLayer,
  tagOf,
  type NonInviteServerTransaction,
} from '../../../src/carriers/sip/transactions.ts';
import { PCMU } from '../../../src/carriers/sip/rtp-sender.ts';
import { SipUserAgent, type SipCall } from '../../../src/carriers/sip/user-agent.ts';
import { SipSocketWire, type SipPeer } from '../../../src/carriers/sip/wire.ts';
import { realTimers } from '../../../src/timers.ts';
import type { TestService } from '../../helpers/service.ts';
import { freeUdpPort } from '../../helpers/net.ts';
import { SCRIPTS, type CarrierDriver, type ScriptName } from '../conformance.ts';

const HOST = '127.0.0.1';
const PHONES = Object.fromEntries(
  Object.keys(SCRIPTS).map((name, i) => [name, `+1415555${String(9700 + i)}`]),
) as Record<ScriptName, string>;
/** The trunk's number: the suite's agent answers it, and calls go out from it. */
const NUMBER = '+14155559790';
/** A number no trunk holds: an INVITE to it is refused. */
const NO_TRUNK_NUMBER = '+14155559799';
const BUSY = '+14155559791';
const NO_ANSWER = '+14155559792';
const DESK = '+14155559793';
/** The service's media ports and the phone's: ranges no other test binds. */
const SERVICE_RTP_PORTS = '46000-46099';
const PHONE_RTP_PORTS = { low: 46100, high: 46199 };
/** A frame louder than this (peak, 16-bit) is the agent speaking. */
const VOICED_PEAK = 400;
/** Quiet this long after the agent's last loud frame ends its utterance. */
const UTTERANCE_END_MS = 300;
/** How long the desk (a phone that answers and says nothing) stays on. */
const DESK_MS = 10_000;

const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The user part of a SIP URI (`sip:+14155559700@host:port` → `+14155559700`). */
const userOf = (uri: string): string => /^sips?:([^@;]+)@/.exec(uri)?.[1] ?? '';

/**
 * One answered call's media between a simulated phone (its Twilio-worded stream, to the driver's own socket server)
 * and the call's RTP (the phone's SipTransport): what a SIP phone's audio path does in between.
 */
class RtpLine {
  readonly phone: TwilioStreamCaller;
  private socket: WebSocket | undefined;
  private readonly waiting: string[] = [];
  private utterances = 0;
  private speaking = false;
  private quiet: NodeJS.Timeout | undefined;

  constructor(
    private readonly call: SipCall,
    lines: Map<string, RtpLine>,
    phoneUrl: string,
  ) {
    const id = randomUUID();
    lines.set(id, this);
    this.phone = new TwilioStreamCaller({ url: `${phoneUrl}/${id}`, customParameters: {} });
    // Attached at once: the greeting's first packets may come before the phone's socket is open, and wait for it.
    call.transport.attach({
      audio: (frame) => this.heard(frame),
      mark: () => undefined,
      dtmf: () => undefined,
      hangup: () => this.socket?.close(1000, 'the service hung up'),
    });
  }

  /** The phone's socket reached the driver's server. */
  attachPhone(socket: WebSocket): void {
    this.socket = socket;
    for (const text of this.waiting.splice(0)) socket.send(text);
    socket.on('message', (data: Buffer) => this.fromPhone(data.toString()));
    // The phone hung up (or its script ended): BYE, unless the service's BYE came first.
    socket.on('close', () => {
      clearTimeout(this.quiet);
      this.call.transport.close('user_hangup');
    });
  }

  private fromPhone(text: string): void {
    const message = JSON.parse(text) as Record<string, unknown>;
    if (message.event === 'media') {
      const payload = (message.media as { payload: string }).payload;
      this.call.transport.sendAudio(muLawDecode(Buffer.from(payload, 'base64')));
    } else if (message.event === 'dtmf') {
      void this.call.transport.sendDigits((message.dtmf as { digit: string }).digit);
    }
  }

  private heard(frame: Int16Array): void {
    let peak = 0;
    for (const sample of frame) peak = Math.max(peak, Math.abs(sample));
    if (peak > VOICED_PEAK) {
      if (!this.speaking) {
        this.speaking = true;
        this.toPhone({ event: 'mark', mark: { name: `u${++this.utterances}:start` } });
      }
      clearTimeout(this.quiet);
      this.quiet = setTimeout(() => {
        this.speaking = false;
        this.toPhone({ event: 'mark', mark: { name: `u${this.utterances}:end` } });
      }, UTTERANCE_END_MS);
    }
    this.toPhone({ event: 'media', media: { payload: Buffer.from(muLawEncode(frame)).toString('base64') } });
  }

  private toPhone(message: Record<string, unknown>): void {
    const text = JSON.stringify(message);
    if (!this.socket) this.waiting.push(text);
    else if (this.socket.readyState === WebSocket.OPEN) this.socket.send(text);
  }
}

/** A call the phone answered, by the number dialled. */
interface Answered {
  number: string;
  call: SipCall;
}

let wire: SipSocketWire;
let ua: SipUserAgent<string>;
let server: Server;
let phoneUrl: string;
let sipPort: number;
let service: TestService;
const lines = new Map<string, RtpLine>();
const answered: Answered[] = [];
const scripts = new Map<ScriptName, SimScript>();
const scriptOf = new Map<string, ScriptName>(
  Object.entries(PHONES).map(([name, number]) => [number, name as ScriptName]),
);
let callers = 0;

/** Runs `script` on a line as a simulated phone does, then stays on until the line closes (at most max_ms). */
async function runScript(line: TwilioStreamCaller, script: ScriptName): Promise<void> {
  const loaded = scripts.get(script)!;
  await new SimCallee({ caller: line, script: loaded, random: () => 0.5, log }).run();
  if (!line.closed && loaded.steps.at(-1)?.kind !== 'hangup')
    await Promise.race([line.waitForClose(), sleep(loaded.maxMs)]);
}

/** Puts a simulated phone on `call` running `script` (or, with none, saying nothing for DESK_MS), then hangs up. */
function talk(call: SipCall, script: ScriptName | undefined): void {
  const line = new RtpLine(call, lines, phoneUrl);
  void line.phone
    .connect()
    .then(() => (script ? runScript(line.phone, script) : Promise.race([line.phone.waitForClose(), sleep(DESK_MS)])))
    .finally(() => line.phone.hangUp());
}

const servicePeer = (): SipPeer => ({ transport: 'udp', address: HOST, port: sipPort });

/**
 * The phone takes the service's REFER (RFC 3515): 202, then NOTIFYs (Event: refer, message/sipfrag) of its call to
 * the Refer-To URI, 100 Trying first and the final status last; after a 200 it hangs its leg with the service up.
 */
function transferee(tx: NonInviteServerTransaction): void {
  const callId = header(tx.request, 'call-id');
  const held = answered.find((a) => a.call.dialog.callId === callId && !a.call.ended);
  const target = parseSipUri(uriOf(header(tx.request, 'refer-to') ?? ''));
  if (!held) return tx.respond(481, 'Call/Transaction Does Not Exist');
  if (!target) return tx.respond(400, 'Bad Refer-To');
  tx.respond(202, 'Accepted');
  const call = held.call;
  const notify = (frag: string, final: boolean): void => {
    const request = call.dialog.request('NOTIFY', {
      headers: [
        { name: 'event', value: `refer;id=${header(tx.request, 'cseq')?.split(' ')[0] ?? ''}` },
        { name: 'subscription-state', value: final ? 'terminated;reason=noresource' : 'active;expires=60' },
      ],
      contentType: 'message/sipfrag;version=2.0',
      body: `${frag}\r\n`,
    });
    ua.requestInDialog(request, call.dialog.nextHop()!, {
      onTimeout: () => undefined,
      // The caller is the desk's now: the phone leaves the service once it has heard the 200's NOTIFY was taken.
      onResponse: (response) => {
        if (final && frag.startsWith('SIP/2.0 2') && response.status >= 200) call.transport.close('user_hangup');
      },
    });
  };
  notify('SIP/2.0 100 Trying', false);
  const uri = uriOf(header(tx.request, 'refer-to')!);
  void ua.dial({ uri, from: `sip:${held.number}@${HOST}`, peer: peerOf(target) }).result.then((result) => {
    if (result.outcome === 'answered') {
      answered.push({ number: target.user ?? '', call: result.call });
      notify('SIP/2.0 200 OK', true);
    } else if (result.outcome === 'rejected') notify(`SIP/2.0 ${result.status} ${result.reason}`, true);
    else notify('SIP/2.0 408 Request Timeout', true);
  });
}

export const sipDriver: CarrierDriver = {
  carrier: 'sip',
  busy: BUSY,
  noAnswer: NO_ANSWER,
  desk: DESK,
  from: NUMBER,
  async start(scriptsDir) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) scripts.set(name, await loadSimScript(scriptsDir, name));
    sipPort = await freeUdpPort();
    server = createServer();
    const sockets = new WebSocketServer({ server });
    sockets.on('connection', (socket, request) => lines.get((request.url ?? '').slice(1))?.attachPhone(socket));
    server.listen(0, HOST);
    await once(server, 'listening');
    phoneUrl = `ws://${HOST}:${(server.address() as AddressInfo).port}`;
    // INVITEs to the busy and unanswered numbers, and everything after them in their calls, go to `refusals`.
    const refused = new Set<string>();
    let refusals: SipTransactionLayer | undefined;
    const route = (message: SipMessage, from: SipPeer): void => {
      // The service's REFERs are the phone's to act on (transferee), on the layer beside the user agent.
      if (message.kind === 'request' && message.method === 'REFER') return refusals!.receive(message, from);
      const callId = header(message, 'call-id') ?? '';
      const number = message.kind === 'request' ? userOf(message.uri) : '';
      if (message.kind === 'request' && message.method === 'INVITE' && tagOf(header(message, 'to')) === undefined)
        if (number === BUSY || number === NO_ANSWER) refused.add(callId);
      (refused.has(callId) ? refusals! : ua).receive(message, from);
    };
    wire = await SipSocketWire.listen({ udp: { host: HOST, port: 0 }, onMessage: route });
    const sentBy = () => `${HOST}:${wire.address().udp}`;
    refusals = new SipTransactionLayer({
      wire,
      timers: realTimers,
      random: cryptoRandomHex,
      sentBy,
      onRequest: (tx) => {
        if (!(tx instanceof InviteServerTransaction)) {
          if (tx.request.method === 'REFER') return transferee(tx);
          return tx.respond(481, 'Call/Transaction Does Not Exist');
        }
        // The unanswered phone rings until the service CANCELs (the layer answers 487).
        if (userOf(tx.request.uri) === BUSY) tx.respond(486, 'Busy Here');
        else tx.respond(180, 'Ringing');
      },
    });
    ua = new SipUserAgent<string>({
      wire,
      timers: realTimers,
      random: cryptoRandomHex,
      publicHost: HOST,
      sentBy,
      ports: new RtpPortPool(PHONE_RTP_PORTS, HOST),
      // Phones from the phone network, as every other carrier's in this suite: μ-law, the scripts' own recordings
      // (a G.722 caller is sip-call.test.ts's baresip, with 16 kHz audio to carry).
      codecs: [PCMU],
      admit: (invite) => ({ verdict: 'accept', value: userOf(invite.uri) }),
      onCall: (call, number) => {
        answered.push({ number, call });
        talk(call, scriptOf.get(number));
      },
    });
  },
  async close() {
    for (const { call } of answered) call.transport.close('user_hangup');
    await wire?.close();
    server?.closeAllConnections();
    server?.close();
  },
  env: () => ({ SIP_LISTEN: `udp:${HOST}:${sipPort}`, RTP_PORTS: SERVICE_RTP_PORTS }),
  async setUp(t) {
    service = t;
    const res = await t.request('POST', '/v2/sip-trunks', {
      body: {
        name: 'conformance',
        numbers: [NUMBER],
        inbound: { allowed_addresses: [`${HOST}/32`] },
        outbound: { address: `${HOST}:${wire.address().udp}`, transport: 'udp' },
      },
    });
    if (res.status !== 201) throw new Error(`the SIP trunk was not created: ${res.status} ${res.text}`);
  },
  answering: (script) => PHONES[script],
  // The service's call ids are not on the SIP wire: the suite's one call to this phone's number is the one it ends.
  async hungUpByService() {
    for (let i = 0; i < 100; i++) {
      const call = answered.filter((a) => a.number === PHONES['conf-no-thanks']).at(-1)?.call;
      if (call?.ended === 'remote_bye') return;
      await sleep(50);
    }
    throw new Error('the service never sent BYE to the SIP phone');
  },
  inbound: {
    number: NUMBER,
    async call(_serviceUrl, script) {
      const caller = `+1415555${String(9780 + callers++)}`;
      const dial = ua.dial({
        uri: `sip:${NUMBER}@${HOST}:${sipPort}`,
        from: `sip:${caller}@${HOST}`,
        peer: servicePeer(),
      });
      const result = await dial.result;
      if (result.outcome !== 'answered')
        throw new Error(`the service did not answer the SIP call: ${JSON.stringify(result)}`);
      answered.push({ number: NUMBER, call: result.call });
      talk(result.call, script);
      // The call's record is found by its caller's number, unique to this call.
      for (let i = 0; i < 100; i++) {
        const list = await service.request('POST', '/v2/calls/list', {
          body: { filter_criteria: { call_from: [caller] } },
        });
        const found = (list.body as { calls: { call_id: string }[] }).calls[0];
        if (found) return found.call_id;
        await sleep(50);
      }
      throw new Error(`no call record for the SIP call from ${caller}`);
    },
    // SIP has no webhook to sign: what no trunk admits is an INVITE to a number of no trunk, answered 403.
    async badlySigned() {
      const dial = ua.dial({
        uri: `sip:${NO_TRUNK_NUMBER}@${HOST}:${sipPort}`,
        from: `sip:+14155550100@${HOST}`,
        peer: servicePeer(),
      });
      const result = await dial.result;
      if (result.outcome === 'answered') {
        result.call.transport.close('user_hangup');
        return { status: 200 };
      }
      return { status: result.outcome === 'rejected' ? result.status : 0 };
    },
  },
};
