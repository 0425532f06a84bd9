// A flow that takes over the line for a while (a transfer, a voicemail drop; next a hold, a
// conference, an IVR menu) is a collaborator of the session, not a part of it: it sees the
// caller's side of the call and answers with an intent, and the session carries the intent out.
// A new flow is a new file and one line where the session lists its flows.
import type { DisconnectionReason } from '../records/record.ts';

/** What a flow asks of the session; once the call is ending, the session does none of it. */
export type FlowIntent =
  /**
   * The flow has the turn: the caller's turns are not the model's, and silence does not count; `cut`: the agent stops
   * talking now.
   */
  | { kind: 'take_turn'; cut: boolean }
  /** Words said without the model; the model's history keeps what is heard of them. */
  | { kind: 'say'; text: string }
  /**
   * The agent's first words (its begin message), held until the callee was heard; `answering`: they answer the callee's
   * words under way ("Hello?"), which are then kept, not answered again by the model.
   */
  | { kind: 'greet'; text: string; answering: boolean }
  /** The turn is the model's again: it is told `note`, and answers. */
  | { kind: 'give_back'; note: string }
  /** The call ends with `reason`; `say`: last words first; `transferred`: where the caller went, and when. */
  | {
      kind: 'end';
      reason: DisconnectionReason;
      message: string;
      say?: string | undefined;
      transferred?: { destination: string; at: number } | undefined;
    };

/** The session as a flow sees it. */
export interface FlowHost {
  /** The call is connected and not ending. */
  readonly live: boolean;
  act(intent: FlowIntent): void;
}

/** What every flow is told of the caller's side, on the call's clock in ms; each method is optional. */
export interface LineFlow {
  /** The flow has the line: what the caller says is not the model's to answer. */
  readonly holdsLine: boolean;
  /** One 20 ms caller frame that began at `atMs` on the inbound clock, as it arrives. */
  audio?(frame: Int16Array, atMs: number): void;
  /** The VAD has judged the caller's audio up to `atMs` (after its speech events): silences are timed to here. */
  judged?(atMs: number): void;
  speechStarted?(atMs: number): void;
  speechEnded?(atMs: number): void;
  /** Words recognised so far (a partial reading or a whole spoken turn). */
  words?(text: string, atMs: number): void;
  /** The call is ending: the flow's timers and legs go. */
  stop(): void;
}
