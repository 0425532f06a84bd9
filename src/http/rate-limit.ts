// A fixed one-minute window per organization: cheap, and enough to stop a runaway client.
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';

export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
  ) {}

  /** Counts one request; throws 429 with Retry-After when the window is full. 0 disables. */
  take(key: string): void {
    if (this.perMinute === 0) return;
    const now = this.clock.now();
    let window = this.windows.get(key);
    if (!window || now - window.start >= 60_000) {
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    window.count++;
    if (window.count > this.perMinute) {
      const retryAfter = Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000));
      throw new ApiError('RATE_LIMITED', `more than ${this.perMinute} requests in a minute; retry in ${retryAfter} s`, {
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
  }
}
