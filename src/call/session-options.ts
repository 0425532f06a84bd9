// What a CallSession is built from (the manager and the tests make these) and what it reports at its end.
import type { Logger } from 'pino';
import type { AgentConfig, VoicemailHandling } from '../agents/schema.ts';
import type { TurnLatency } from '../records/events.ts';
import type { CallRecord, DisconnectionReason, TranscriptItem, TranscriptMessage } from '../records/record.ts';
import type { SttStream, SttStreamEvents, TtsEngine, VadStream } from '../speech/types.ts';
import type { Timers } from '../timers.ts';
import type { PacerWakeups } from './agent/pacer.ts';
import type { VoiceChoice } from './provider-chains.ts';
import type { CallProviders, FallbackReason, ProviderChain } from './providers.ts';
import type { AgentBrain } from './model/model-turn.ts';
import type { ModelTurnSource } from './realtime/realtime-brain.ts';
import type { CallRecorder } from './recorder.ts';
import type { ColdTransfer } from './transfer/transfer-flow.ts';
import type { WarmTransferCarrier } from './transfer/warm-transfer.ts';
import type { CallTransport } from './transport.ts';

export interface SessionEngines {
  openVad(): Promise<VadStream>;
  /** Opens the recogniser serving now. */
  openStt(events: SttStreamEvents): Promise<SttStream>;
  /** The recogniser serving failed: true when the next one now serves, false when none is left (providers.ts). */
  sttFailed?(reason: FallbackReason): boolean;
  /** How long the recogniser serving may take over a turn's final text; null: as long as it takes. */
  sttFinalDeadlineMs?(): number | null;
  /** The agent's own voice; with `voices`, the first of them. */
  tts: TtsEngine;
  /** The agent's voices in order, when it has more than its own to move to. */
  voices?: ProviderChain<VoiceChoice> | undefined;
}

export interface SessionResult {
  reason: DisconnectionReason;
  message: string | null;
  startTimestamp: number;
  endTimestamp: number;
  transcript: TranscriptMessage[];
  transcriptWithToolCalls: TranscriptItem[];
  latency: CallRecord['latency'];
  userTurns: number;
  /** Where the caller was transferred, and when the destination answered (wall ms). */
  transfer: { destination: string; at: number } | null;
}

export interface SessionOptions {
  callId: string;
  agent: AgentConfig;
  /** The system prompt with dynamic variables filled in. */
  systemPrompt: string;
  transport: CallTransport;
  timers: Timers;
  /** Shared by the calls on this event loop, so the inbound path can send frames that fell due. */
  pacerWakeups?: PacerWakeups | undefined;
  engines: SessionEngines;
  brain: AgentBrain;
  /** A speech-to-speech model's own turn detection (llm.turn_detection "model"): it ends the caller's turns. */
  modelTurns?: ModelTurnSource | undefined;
  recorder?: CallRecorder | undefined;
  /** Rate the recogniser is opened at; the transport's rate when absent (then it is fed as is). */
  sttSampleRate?: 8000 | 16000;
  log: Logger;
  /** Checked every second; a reason ends the call (credit balance used up, …). */
  guard?: (connectedMs: number) => Promise<DisconnectionReason | null>;
  /** The transcript so far, each time a message or tool item settles (the record keeps it at once). */
  onTranscript?: ((messages: readonly TranscriptMessage[], items: readonly TranscriptItem[]) => void) | undefined;
  /**
   * Starts a cold transfer of the caller to `to` on the carrier (the line is given up); throws when
   * it cannot. Absent: the call cannot transfer, and transfer_call only ends it.
   */
  transfer?: ColdTransfer | undefined;
  /** What the carrier does for a warm transfer; absent: a warm transfer_call is done cold. */
  warmTransfer?: WarmTransferCarrier | undefined;
  /** A call the agent placed: the callee's first words, before the agent spoke, are how they picked up. */
  outbound?: boolean | undefined;
  /** An outbound call that looks for an answering machine, and what to do on one. */
  voicemail?: VoicemailHandling | null | undefined;
  /** The providers the call's chains use (providers.ts): which served each turn goes into latency.providers. */
  providers?: CallProviders | undefined;
  /** Each answered turn's latency parts, for observers in the process (the bench's per-turn breakdown). */
  onTurnLatency?: ((parts: TurnLatency) => void) | undefined;
  onEnd(result: SessionResult): void;
}
