// Keypad digits the caller presses (DTMF), gathered into one turn the way a phone menu does: until
// the terminator key, a number of digits, or a pause after the last key.
import type { TimerHandle, Timers } from '../../timers.ts';

/** How the model is told a turn was keyed, not spoken: "Keypad: 1234". */
export const KEYPAD_TURN_PREFIX = 'Keypad: ';

/** Keys a phone can send (DTMF 0-9, *, #, A-D). */
export const KEYPAD_DIGIT = /^[0-9*#A-D]$/;

export interface KeypadSettings {
  /** The key that ends an entry (not part of it); null: only the count or the pause do. */
  terminator: string | null;
  /** An entry ends once it has this many digits; null: no limit. */
  maxDigits: number | null;
  /** Pause after the last key that ends the entry. */
  timeoutMs: number;
}

export interface KeypadEntry {
  /** The keys pressed, the terminator left out (a terminator pressed alone is the entry). */
  digits: string;
  /** Wall ms of the first and the last key. */
  firstAt: number;
  lastAt: number;
}

export interface KeypadEvents {
  /** The first key of an entry: the caller takes the floor. */
  began(): void;
  entered(entry: KeypadEntry): void;
}

export class KeypadInput {
  private digits = '';
  private firstAt = 0;
  private lastAt = 0;
  private timer: TimerHandle | undefined;

  constructor(
    private readonly settings: KeypadSettings,
    private readonly timers: Timers,
    private readonly events: KeypadEvents,
  ) {}

  /** One key; anything that is not a phone key is ignored. */
  press(digit: string): void {
    if (!KEYPAD_DIGIT.test(digit)) return;
    const now = this.timers.now();
    const first = this.digits === '' && this.timer === undefined;
    if (first) {
      this.firstAt = now;
      this.events.began();
    }
    this.lastAt = now;
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    if (digit === this.settings.terminator) {
      this.enter(this.digits || digit);
      return;
    }
    this.digits += digit;
    if (this.settings.maxDigits !== null && this.digits.length >= this.settings.maxDigits) {
      this.enter(this.digits);
      return;
    }
    this.timer = this.timers.setTimeout(() => this.enter(this.digits), this.settings.timeoutMs);
  }

  /** The call is over: keys still gathering are dropped. */
  stop(): void {
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.digits = '';
  }

  private enter(digits: string): void {
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.digits = '';
    this.events.entered({ digits, firstAt: this.firstAt, lastAt: this.lastAt });
  }
}
