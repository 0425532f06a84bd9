// Turns per-window speech probabilities into speech_start / speech_end events with hysteresis
// (start at ≥ threshold, end below negativeThreshold) and minimum durations. Pure and
// model-free, so the rules are tested without a model.
import type { VadEvent } from '../types.ts';

export interface SegmenterSettings {
  sampleRate: number;
  threshold: number;
  negativeThreshold: number;
  minSpeechMs: number;
  minSilenceMs: number;
}

export class SpeechSegmenter {
  private readonly settings: SegmenterSettings;
  private isSpeaking = false;
  /** Sample index where the current candidate speech (or silence) run began; -1 when none. */
  private candidateStart = -1;
  private silenceStart = -1;

  constructor(settings: SegmenterSettings) {
    this.settings = settings;
  }

  get speaking(): boolean {
    return this.isSpeaking;
  }

  /**
   * Feed one window's probability; windowStart and windowSize in samples. Appends events whose
   * `at` is the boundary (first speech window / first silent window) in seconds.
   */
  push(probability: number, windowStart: number, windowSize: number, events: VadEvent[]): void {
    const { threshold, negativeThreshold, minSpeechMs, minSilenceMs, sampleRate } = this.settings;
    const windowEnd = windowStart + windowSize;
    const lastedMs = (from: number) => ((windowEnd - from) * 1000) / sampleRate;
    if (!this.isSpeaking) {
      if (probability >= threshold) {
        if (this.candidateStart < 0) this.candidateStart = windowStart;
      } else if (probability < negativeThreshold) {
        this.candidateStart = -1;
      }
      // Between the thresholds a candidate neither starts nor breaks (hysteresis).
      if (this.candidateStart >= 0 && lastedMs(this.candidateStart) >= minSpeechMs) {
        this.isSpeaking = true;
        this.silenceStart = -1;
        events.push({ type: 'speech_start', at: this.candidateStart / sampleRate });
        this.candidateStart = -1;
      }
      return;
    }
    if (probability >= threshold) {
      this.silenceStart = -1;
    } else if (probability < negativeThreshold && this.silenceStart < 0) {
      this.silenceStart = windowStart;
    }
    if (this.silenceStart >= 0 && lastedMs(this.silenceStart) >= minSilenceMs) {
      this.isSpeaking = false;
      events.push({ type: 'speech_end', at: this.silenceStart / sampleRate });
      this.silenceStart = -1;
    }
  }

  reset(): void {
    this.isSpeaking = false;
    this.candidateStart = -1;
    this.silenceStart = -1;
  }
}
