// One call's media socket. Symmetric RTP (RFC 4961): the agent's packets leave from the port the
// SDP announced, the one the far side sends to, so a NAT or firewall that let the far side's
// packets in lets ours out. Only the negotiated address and port are heard: a datagram from
// anywhere else is counted and dropped, so nobody who guesses the port can speak into a call.
// RTCP is not sent; the far side's RTCP, should it arrive on this port, is not RTP and dropped.
import type { RemoteInfo, Socket } from 'node:dgram';
import type { Timers } from '../../timers.ts';
import { MediaTimeout, MEDIA_TIMEOUT_MS } from './media-timeout.ts';
import { parseRtp, type RtpPacket } from './rtp-packet.ts';

export interface MediaAddress {
  address: string;
  port: number;
}

export interface RtpEndpointOptions {
  socket: Socket;
  timers: Timers;
  /** Each RTP packet from the negotiated address. Its payload is a view into the datagram. */
  onPacket: (packet: RtpPacket) => void;
  /** No RTP from the negotiated address for `mediaTimeoutMs`: the far side is gone. */
  onMediaTimeout: () => void;
  mediaTimeoutMs?: number;
}

export interface RtpEndpointStats {
  received: number;
  sent: number;
  /** Datagrams from an address other than the negotiated one. */
  ignored: number;
  /** Datagrams from the negotiated address that are not RTP. */
  malformed: number;
}

export class RtpEndpoint {
  private remote: MediaAddress | null = null;
  private readonly timeout: MediaTimeout;
  private closed = false;
  readonly stats: RtpEndpointStats = { received: 0, sent: 0, ignored: 0, malformed: 0 };
  private readonly listener = (datagram: Buffer, from: RemoteInfo): void => this.receive(datagram, from);

  constructor(private readonly o: RtpEndpointOptions) {
    this.timeout = new MediaTimeout(o.timers, o.onMediaTimeout, o.mediaTimeoutMs ?? MEDIA_TIMEOUT_MS);
    o.socket.on('message', this.listener);
  }

  /** The address and port the far side's SDP gave (again on a re-INVITE that moves the media). */
  setRemote(remote: MediaAddress): void {
    this.remote = { address: normalizeAddress(remote.address), port: remote.port };
  }

  /** The far side holds the call (sendonly/inactive): silence from it is no timeout; resumed by its next packet. */
  holdTimeout(): void {
    this.timeout.pause();
  }

  resumeTimeout(): void {
    this.timeout.resume();
  }

  send(packet: Uint8Array): void {
    if (this.closed || !this.remote) return;
    this.stats.sent++;
    this.o.socket.send(packet, this.remote.port, this.remote.address);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.timeout.stop();
    this.o.socket.off('message', this.listener);
  }

  private receive(datagram: Buffer, from: RemoteInfo): void {
    const remote = this.remote;
    if (this.closed) return;
    if (!remote || from.port !== remote.port || normalizeAddress(from.address) !== remote.address) {
      this.stats.ignored++;
      return;
    }
    const packet = parseRtp(datagram);
    if (!packet) {
      this.stats.malformed++;
      return;
    }
    this.stats.received++;
    this.timeout.heard();
    this.o.onPacket(packet);
  }
}

/** An IPv4 address as a dual-stack socket reports it (`::ffff:192.0.2.1`) is the IPv4 address. */
function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address.toLowerCase();
}
