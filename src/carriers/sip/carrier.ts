// The SIP carrier (issue 37): when SIP_LISTEN is set, the service listens for SIP and any phone system or carrier
// an organization has made a trunk for (sip-trunks/) sends calls straight to its agents. An INVITE is admitted
// against the trunk holding the called number (allowed source address, or digest with the trunk's username and
// password), and the number must be one of an agent's inbound_numbers in the trunk's organization; anything else is
// the same 403, before any port is bound or record made. An admitted call is answered (180, 200 with SDP), recorded
// `inbound` with the From user part as call_from, and its SipTransport handed to the call manager as a media
// stream's transport is (carriers/media-route.ts). A BYE from the caller ends the call as the caller's hang-up; the
// agent's hang-up sends BYE. Either kind is transferred through its trunk (dialer.ts: REFER cold, a second INVITE
// bridged in the service warm). A call placed from one of an organization's trunk numbers goes out through that trunk's
// outbound side (dialer.ts); every other number goes on to the carriers after this one.
import { randomBytes } from 'node:crypto';
import type { AgentVersion } from '../../agents/schema.ts';
import { cryptoRandomHex } from '../../clock.ts';
import type { SipTrunk } from '../../sip-trunks/schema.ts';
import { EgressPolicy } from '../../net/egress.ts';
import { realTimers } from '../../timers.ts';
import type { CarrierDefinition, CarrierHttp } from '../carrier.ts';
import { calledNumberOf, InboundAdmission, type InboundTrunk } from './admission.ts';
import { parseSipUri, uriOf } from './dialog.ts';
import { DigestServer } from './digest.ts';
import { SipDialer } from './dialer.ts';
import { InviteFloodGuard } from './flood.ts';
import { publicHostFor, startSipService, type SipService } from './listen.ts';
import type { SipRequest } from './message.ts';
import { RtpPortPool } from './rtp-ports.ts';
import type { InviteAdmission, SipCall } from './user-agent.ts';
import type { SipPeer } from './wire.ts';

interface AdmittedSipCall {
  orgId: string;
  agent: AgentVersion;
  trunkId: string;
  calledNumber: string;
}

const inboundTrunkOf = (trunk: SipTrunk): InboundTrunk<SipTrunk> => ({
  numbers: trunk.numbers,
  allowedAddresses: trunk.inbound.allowed_addresses,
  username: trunk.inbound.username,
  password: trunk.inbound.password,
  value: trunk,
});

/** The From header's user part: `+` and digits for a phone number, else as written; empty when there is none. */
export function callerOf(from: string): string {
  const user = parseSipUri(uriOf(from))?.user;
  if (user === undefined) return '';
  const digits = /^\+?(\d{3,15})$/.exec(user);
  return digits ? `+${digits[1]}` : user;
}

export const sipCarrier: CarrierDefinition = {
  name: 'sip',
  async create({ config, sipTrunks, clock, logger, outcomes, next, egress }) {
    const sip = config.sip;
    if (!sip) return undefined;
    const log = logger.child({ carrier: 'sip' });
    const publicHost = publicHostFor(sip.listen, sip.publicHost);
    const digest = new DigestServer({
      key: randomBytes(32),
      realm: publicHost,
      clock,
      random: cryptoRandomHex,
    });
    // Trunks come from the store by number, not as a list: admitAmong is given the ones that hold it.
    const admission = new InboundAdmission<SipTrunk>(() => [], digest);
    let http: CarrierHttp | undefined;

    const admit = async (invite: SipRequest, from: SipPeer): Promise<InviteAdmission<AdmittedSipCall>> => {
      const refuse = { verdict: 'refuse' } as const;
      if (!http) return refuse;
      const number = calledNumberOf(invite.uri);
      const held = number === undefined ? undefined : await sipTrunks.byNumber(number);
      const verdict = admission.admitAmong(
        { holders: held ? [inboundTrunkOf(held.trunk)] : [], anyCredentials: await sipTrunks.anyWithCredentials() },
        invite,
        from,
      );
      if (verdict.verdict !== 'accept') {
        if (verdict.verdict === 'refuse') log.info({ from: from.address, to: number ?? null }, 'SIP call refused');
        return verdict;
      }
      const agent = await http.agents.findByInboundNumber(verdict.value.calledNumber);
      if (!held || !agent || agent.orgId !== held.orgId) {
        log.info(
          { from: from.address, to: verdict.value.calledNumber },
          'SIP call refused: no agent of the trunk’s organization answers the number',
        );
        return refuse;
      }
      return {
        verdict: 'accept',
        value: { orgId: held.orgId, agent, trunkId: held.trunk.sip_trunk_id, calledNumber: verdict.value.calledNumber },
      };
    };

    const onCall = (call: SipCall, admitted: AdmittedSipCall): void => {
      const h = http!;
      call.onEnded = (how) =>
        log.info(
          { sip_call_id: call.dialog.callId, how, rtp: call.transport.rtpStats, jitter: call.transport.jitterStats },
          'SIP call ended',
        );
      void (async () => {
        const { record } = await h.calls.register(admitted.orgId, admitted.agent, {
          call_type: 'inbound',
          call_from: callerOf(call.dialog.state.remoteParty) || null,
          call_to: admitted.calledNumber,
          metadata: { sip_call_id: call.dialog.callId, sip_trunk_id: admitted.trunkId },
        });
        // Held by the dialer, which transfers it through the trunk it came in on.
        const line = dialer.adopt(record.call_id, admitted.orgId, admitted.calledNumber, call);
        await h.manager.connect(admitted.orgId, record.call_id, line);
      })().catch((error: unknown) => {
        log.error({ err: error, sip_call_id: call.dialog.callId }, 'SIP call failed to start');
        call.transport.close('error_service');
      });
    };

    const service: SipService<AdmittedSipCall> = await startSipService<AdmittedSipCall>({
      listen: sip.listen,
      publicHost,
      // Media binds where signalling does: a loopback-only listener keeps its RTP on loopback too.
      ports: new RtpPortPool(sip.rtpPorts, sip.listen.every((e) => e.host === '127.0.0.1') ? '127.0.0.1' : '0.0.0.0'),
      timers: realTimers,
      random: cryptoRandomHex,
      floodGuard: new InviteFloodGuard(clock),
      mediaTimeoutMs: sip.mediaTimeoutMs,
      admit,
      onCall,
      onError: (error) => log.warn({ err: error }, 'SIP listener error'),
    });
    log.info({ ports: service.ports, public_host: publicHost }, 'SIP listening');
    const dialer = new SipDialer({
      trunks: sipTrunks,
      next,
      dial: (o) => service.ua.dial(o),
      publicHost,
      ringTimeoutMs: config.ringTimeoutMs,
      timers: realTimers,
      udpListening: service.ports.udp !== undefined,
      egress: egress ?? new EgressPolicy(),
      log,
      outcomes: () => ({
        dialing: async (orgId, callId, metadata) => {
          await http?.callRepo.update(orgId, callId, (record) => ({
            ...record,
            metadata: { ...record.metadata, ...metadata },
          }));
        },
        answered: async (orgId, callId, line) => {
          if (!http) return line.close('error_service');
          await http.manager.connect(orgId, callId, line);
        },
        noAnswer: (callId) => outcomes().noAnswer(callId),
        failed: (callId, message) => outcomes().failed(callId, message),
        transferAnswered: (callId) => outcomes().transferAnswered(callId),
        transferFailed: (callId, status) => outcomes().transferFailed(callId, status),
        returnStream: (callId, secret, line) => http?.manager.returnStream(callId, secret, line) ?? false,
        consultFailed: (callId, status) => outcomes().consultFailed(callId, status),
        carrierEnded: (callId) => outcomes().completed(callId),
      }),
    });
    return {
      name: 'sip',
      dialer,
      mount(_app, carrierHttp) {
        http = carrierHttp;
      },
      close: () => {
        dialer.closeBridges();
        return service.close();
      },
    };
  },
};
