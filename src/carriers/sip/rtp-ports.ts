// UDP ports for media, from RTP_PORTS (read by src/config.ts). Each call takes an even
// port and keeps the odd one above it free for RTCP (RFC 3550 §11), so a range of N ports holds
// N/2 calls. Ports are handed out in turn from a cursor, not lowest-first, so a port just freed is
// not given to the next call while packets of the old one may still be on their way.
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { PortRange } from '../../config.ts';
import { SipError } from './errors.ts';

export interface BoundRtpPort {
  socket: Socket;
  port: number;
  /** Closes the socket and gives the port back. */
  release(): void;
}

export class RtpPortPool {
  private readonly inUse = new Set<number>();
  private cursor: number;
  /** Even ports in the range. */
  readonly capacity: number;

  constructor(
    private readonly range: PortRange,
    /** The address media sockets bind to (the SIP listening host, or 0.0.0.0). */
    private readonly host: string = '0.0.0.0',
  ) {
    this.cursor = range.low;
    this.capacity = Math.floor((range.high - range.low + 1) / 2);
  }

  get used(): number {
    return this.inUse.size;
  }

  /**
   * A socket bound to the next free even port. A port another process holds is passed over;
   * when no port of the range can be bound, SIP_NO_RTP_PORT (the call is answered 503).
   */
  async bind(): Promise<BoundRtpPort> {
    for (let tried = 0; tried < this.capacity; tried++) {
      const port = this.cursor;
      this.cursor = port + 2 + 1 > this.range.high ? this.range.low : port + 2;
      if (this.inUse.has(port)) continue;
      this.inUse.add(port);
      const socket = await this.tryBind(port);
      if (!socket) {
        this.inUse.delete(port);
        continue;
      }
      let released = false;
      return {
        socket,
        port,
        release: () => {
          if (released) return;
          released = true;
          socket.close();
          this.inUse.delete(port);
        },
      };
    }
    throw new SipError('SIP_NO_RTP_PORT', `no free RTP port in ${this.range.low}-${this.range.high}`);
  }

  private tryBind(port: number): Promise<Socket | null> {
    return new Promise((resolve) => {
      const socket = createSocket(isIPv6(this.host) ? 'udp6' : 'udp4');
      const failed = (): void => {
        socket.close();
        resolve(null);
      };
      socket.once('error', failed);
      // Exclusive: in a cluster worker a shared bind succeeds on a port another worker's call holds.
      socket.bind({ port, address: this.host, exclusive: true }, () => {
        socket.off('error', failed);
        resolve(socket);
      });
    });
  }
}
