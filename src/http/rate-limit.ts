// Fixed one-minute windows: per organization, counted in the store (one statement a request) so
// every process sharing it enforces one limit; per client address for failed authentications, in
// memory, so keys cannot be guessed at the speed of the network.
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { RATE_WINDOW_MS, type RateWindowStore } from '../store/rate-windows.ts';

export class RateLimiter {
  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    /** Counted in the store, so the limit holds across every process sharing it. */
    private readonly windows: RateWindowStore,
  ) {}

  /** Counts one request; throws 429 with Retry-After when the window is full. 0 disables. */
  async take(key: string): Promise<void> {
    if (this.perMinute === 0) return;
    const now = this.clock.now();
    const window = await this.windows.hit(key, now);
    if (window.count > this.perMinute) {
      const retryAfter = Math.max(1, Math.ceil((window.start + RATE_WINDOW_MS - now) / 1000));
      throw new ApiError('RATE_LIMITED', `more than ${this.perMinute} requests in a minute; retry in ${retryAfter} s`, {
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
  }
}

export const AUTH_FAILURE_DEFAULTS = {
  /** Failed authentications an address may make in a minute before it is refused outright. */
  perMinute: 20,
  /** Addresses remembered at once; past that, the expired windows are dropped. */
  maxTracked: 10_000,
} as const;

export class AuthFailureLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly clock: Clock) {}

  /** Refuses (429) an address that has failed too often this minute, before its key is even looked at. */
  check(address: string): void {
    const window = this.windows.get(address);
    if (!window) return;
    const now = this.clock.now();
    if (now - window.start >= 60_000) {
      this.windows.delete(address);
      return;
    }
    if (window.count >= AUTH_FAILURE_DEFAULTS.perMinute) {
      const retryAfter = Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000));
      throw new ApiError(
        'RATE_LIMITED',
        `too many failed authentications from this address; retry in ${retryAfter} s`,
        {
          headers: { 'Retry-After': String(retryAfter) },
        },
      );
    }
  }

  failed(address: string): void {
    const now = this.clock.now();
    let window = this.windows.get(address);
    if (!window || now - window.start >= 60_000) {
      if (this.windows.size >= AUTH_FAILURE_DEFAULTS.maxTracked) this.forgetExpired(now);
      window = { start: now, count: 0 };
      this.windows.set(address, window);
    }
    window.count++;
  }

  private forgetExpired(now: number): void {
    for (const [address, window] of this.windows) if (now - window.start >= 60_000) this.windows.delete(address);
  }
}
