// Runs calls: when a transport connects for a registered call, it builds the session (agent
// version, engines, model, tools, recorder), and it keeps the call record in step — written
// at registration, updated as the call connects, finalized exactly once.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { voicemailHandling, type AgentConfig, type VoicemailHandling } from '../agents/schema.ts';
import { analyzeCall } from '../analysis/analyze.ts';
import type { CallEvents } from '../calls/events.ts';
import { ADMISSION_MESSAGES, type CallService } from '../calls/service.ts';
import { llmMetadataOf, type CallRecord } from '../calls/record.ts';
import { LLM_CLIENT_DEFAULTS } from '../llm/client.ts';
import { fillVariables } from '../llm/prompt.ts';
import type { OutboundHttp } from '../net/http.ts';
import { runReply, type ReplyHooks } from './model/reply.ts';
import type { LlmRequestMetadata } from '../llm/types.ts';
import type { EngineLease, SpeechEngineProvider, TtsEngine } from '../speech/types.ts';
import type { AgentRepository } from '../agents/repository.ts';
import type { CallRepository } from '../calls/repository.ts';
import { ToolExecutor } from '../tools/executor.ts';
import { INTERNAL_SAMPLE_RATE } from '../audio/pcm.ts';
import type { CallTransport } from './transport.ts';
import { CallLine } from './line.ts';
import type { WarmTransferCarrier } from './warm-transfer.ts';
import { readWavFile } from '../audio/wav.ts';
import type { Dialer } from '../calls/dialer.ts';
import type { RandomHex } from '../clock.ts';
import { hashStreamSecret, streamSecretMatches } from '../calls/stream-secret.ts';
import { callCost } from './cost.ts';
import type { OrgLimits } from './limits.ts';
import { PacerWakeups } from './agent/pacer.ts';
import { CallRecorder } from './recorder.ts';
import type { ActiveCall, CallRegistry } from './registry.ts';
import type { AgentBrain } from './model/model-turn.ts';
import { CallSession, type SessionResult } from './session.ts';
import type { Timers } from '../timers.ts';

/** What a caller on hold for a warm transfer hears (scripts/make-hold-audio.ts makes it). */
const HOLD_AUDIO_FILE = join(import.meta.dirname, '..', '..', 'media', 'hold', 'hold-chime.8k.wav');

/** What the model hears when it tries to transfer a browser call. */
export const WEB_TRANSFER_REFUSAL = 'Transfers need a phone line, and this is a browser call: the caller cannot be transferred. Tell them, and offer what you can do here.';

/** The number a transfer's destination sees: this service's side of the call, the number called (inbound) or calling (outbound). */
function serviceNumberOf(record: CallRecord): string | null {
  return record.call_type === 'inbound' ? record.call_to : (record.presentation_number ?? record.call_from);
}

/** The agent's voicemail handling with its message's dynamic variables filled in. */
function filledVoicemail(handling: VoicemailHandling | null, variables: Record<string, string>): VoicemailHandling | null {
  return handling?.message ? { ...handling, message: fillVariables(handling.message, variables) } : handling;
}

type TokenUsage = NonNullable<CallRecord['llm_token_usage']>;

export interface CallManagerDeps {
  calls: CallRepository;
  callService: CallService;
  agents: AgentRepository;
  events: CallEvents;
  registry: CallRegistry;
  limits: OrgLimits;
  engines: SpeechEngineProvider;
  timers: Timers;
  log: Logger;
  dataDir: string;
  publicUrl: () => string;
  pricePerMinute: number;
  /** Every request an agent's configuration causes (model, tools, analysis) goes through it. */
  outbound: OutboundHttp;
  /** Runs after a call ended (post-call analysis); awaited by close() in tests and shutdown. */
  analyze?: boolean;
  /** The carrier, for transfers of live calls. */
  dialer?: Dialer | undefined;
  /** Secrets for a caller's stream back after a failed transfer. */
  random?: RandomHex | undefined;
  /** This process among the nodes sharing the store: it owns the calls it serves. */
  nodeId?: string | undefined;
}

export class CallManager {
  private readonly background = new Set<Promise<unknown>>();
  private readonly holdAudioByRate = new Map<number, Promise<Int16Array>>();
  /** Every call's outbound pacer; the media routes run its overdue wake-ups after each inbound message. */
  readonly pacerWakeups: PacerWakeups;

  constructor(private readonly d: CallManagerDeps) {
    this.pacerWakeups = new PacerWakeups(d.timers);
  }

  recordingPath(callId: string): string {
    return join(this.d.dataDir, 'recordings', `${callId}.wav`);
  }

  /** Where the API serves a call's recording. */
  recordingUrl(callId: string): string {
    return `${this.d.publicUrl()}/v2/calls/${callId}/recording`;
  }

  /** A stream opened for a call under way: the caller back from a failed transfer, if `secret` is theirs. */
  returnStream(callId: string, secret: string, transport: CallTransport): boolean {
    return this.d.registry.get(callId)?.returnStream(secret, transport) ?? false;
  }

  /** A media transport opened for a registered call: run the call on it. */
  async connect(orgId: string, callId: string, connection: CallTransport): Promise<void> {
    const transport = new CallLine(connection);
    const record = await this.d.calls.get(orgId, callId);
    if (!record || record.call_status !== 'registered') {
      transport.close('error_service');
      return;
    }
    const version = record.agent_version === null ? undefined : await this.d.agents.get(orgId, record.agent_id, record.agent_version);
    if (!version) {
      await this.d.callService.endUnconnected(orgId, callId, 'error', 'error_service', `agent ${record.agent_id} version ${record.agent_version} no longer exists`);
      transport.close('error_service');
      return;
    }
    // A call admitted at registration already holds its slot; one that found none is admitted now or refused.
    const refused = await this.d.limits.admit(orgId, callId);
    if (refused) {
      await this.d.callService.endUnconnected(orgId, callId, 'not_connected', refused, ADMISSION_MESSAGES[refused]);
      transport.close(refused);
      return;
    }
    // Whichever node the stream reached serves the call, and a peer finishes it only if this node dies.
    if (this.d.nodeId) await this.d.calls.setOwner(callId, this.d.nodeId);
    const guard = await this.d.limits.guard(orgId);
    const agent = version.config;
    const log = this.d.log.child({ call_id: callId, org_id: orgId });
    const metadata = llmMetadataOf(record, version.version);
    const variables = metadata.dynamic_variables;
    // Engines and recorder take the line's own rate (8 kHz on a phone): no resampling per frame.
    const sampleRate = transport.sampleRate ?? INTERNAL_SAMPLE_RATE;
    const recorder = record.opt_out_sensitive_data_storage ? undefined : new CallRecorder(this.recordingPath(callId), sampleRate);
    let executor: ToolExecutor | undefined;
    let finalized: Promise<void> = Promise.resolve();
    const { outbound } = this.d;
    const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, turns: 0 };
    const brain: AgentBrain = {
      respond: (messages, hooks, signal, clock) => {
        executor ??= new ToolExecutor(agent.tools, { clock, dispatcher: outbound.dispatcher() });
        const client = { dispatcher: outbound.dispatcher(LLM_CLIENT_DEFAULTS.connectTimeoutMs) };
        const counted: ReplyHooks = {
          ...hooks,
          transferRefusal: transport.kind === 'web' ? WEB_TRANSFER_REFUSAL : undefined,
          onUsage: (used) => {
            usage.prompt_tokens += used.prompt_tokens;
            usage.completion_tokens += used.completion_tokens;
            usage.total_tokens += used.total_tokens;
            usage.turns++;
          },
          onToolFinished: (run) => {
            hooks.onToolFinished?.(run);
            if (run.latencyMs !== null) this.d.events.emit('tool', { orgId, callId, name: run.invocation.name, ms: run.latencyMs, ok: run.failure === null });
          },
        };
        return runReply({ llm: agent.llm, messages, metadata, tools: executor, hooks: counted, signal, client });
      },
    };
    // Leased until the session has finished: the provider closes idle engines to stay bounded, never one a call holds.
    const stt = this.d.engines.stt(agent.stt);
    let tts: EngineLease<TtsEngine> | undefined;
    const releaseEngines = (): void => {
      stt.release();
      tts?.release();
    };
    let session: CallSession;
    let returnSecretHash: string | null = null;
    let consultSecretHash: string | null = null;
    try {
      tts = this.d.engines.tts(agent.voice);
      session = new CallSession({
        callId,
        agent: { ...agent, begin_message: fillVariables(agent.begin_message, variables) },
        systemPrompt: fillVariables(agent.system_prompt, variables),
        transport,
        timers: this.d.timers,
        pacerWakeups: this.pacerWakeups,
        engines: {
          openVad: () => this.d.engines.vad.open({ sampleRate }),
          // Phone audio is 8 kHz at heart: the recogniser's telephone-band model hears it as it came.
          openStt: (events) => stt.engine.open({ sampleRate, language: agent.stt.language, ...(agent.stt.phrases ? { phrases: agent.stt.phrases } : {}), events }),
          tts: tts.engine,
        },
        brain,
        recorder,
        log,
        transfer: this.transferOf(callId, record, transport),
        // Never awaited here: a stream that hangs up before the session attaches would go unheard.
        warmTransfer: this.warmTransferOf(callId, record, transport, (secret) => (consultSecretHash = hashStreamSecret(secret))),
        // Only a call the agent placed can reach an answering machine.
        voicemail: record.call_type === 'outbound' ? filledVoicemail(voicemailHandling(agent), variables) : null,
        ...(guard ? { guard } : {}),
        // Kept as it is said: after a crash the record still holds everything up to it.
        onTranscript: recorder
          ? (messages, items) => {
              // The store keeps a call's writes in the order they were asked for (CallRepository.keepTranscript).
              this.d.calls.keepTranscript(orgId, callId, [...messages], [...items]).catch((error: unknown) => log.error({ err: error }, 'transcript could not be kept'));
            }
          : undefined,
        onTurnLatency: this.d.events.listenerCount('turn') > 0 ? (parts) => this.d.events.emit('turn', { orgId, callId, parts }) : undefined,
        onEnd: (result) => {
          finalized = this.finish(orgId, callId, agent, metadata, result, recorder, usage.turns > 0 ? { ...usage } : null).catch((error: unknown) => log.error({ err: error }, 'call record could not be finalized'));
        },
      });
      const active: ActiveCall = {
        callId,
        orgId,
        callType: record.call_type,
        requestEnd: (reason, message, options) => session.end(reason, { ...(message ? { message } : {}), ...(options?.now ? { now: true } : {}) }),
        say: (text, interrupt) => session.speak(text, interrupt),
        addContext: (content) => session.addContext(content),
        listen: (listener) => session.listen(listener),
        voicemailDetected: () => session.carrierFoundMachine(),
        transferAnswered: () => session.transferAnswered(),
        transferFailed: (why) => {
          // The caller comes back on a new stream of this call, opened with a secret made for it.
          const secret = this.d.random?.(24);
          if (!secret || !session.transferFailed(why)) return null;
          returnSecretHash = hashStreamSecret(secret);
          return secret;
        },
        returnStream: (secret, next) => {
          if (streamSecretMatches(secret, consultSecretHash)) {
            consultSecretHash = null;
            return session.consultAnswered(next);
          }
          if (!streamSecretMatches(secret, returnSecretHash)) return false;
          returnSecretHash = null;
          transport.replace(next);
          session.resumeAfterTransfer();
          return true;
        },
        consultFailed: (why) => session.consultFailed(why),
        carrierEnded: () => session.carrierEnded(),
        // The record is final only once the recording is written too.
        finished: session.finished.then(() => finalized),
      };
      this.d.registry.add(active);
      const startTimestamp = this.d.timers.now();
      const started = await this.d.calls.update(orgId, callId, (current) => ({ ...current, call_status: 'ongoing', start_timestamp: startTimestamp }));
      if (started) this.d.events.emit('started', { orgId, record: started });
      transport.notify({ type: 'call_started', call_id: callId, agent_name: agent.agent_name });
      log.info({ agent_id: record.agent_id, agent_version: version.version, transport: transport.kind }, 'call connected');
    } catch (error) {
      // The session was never started and may never finish: the leases go back now, and a call still
      // registered ends (freeing its slot) rather than waiting for a stream that already came.
      releaseEngines();
      await this.d.callService.endUnconnected(orgId, callId, 'error', 'error_service', 'The service failed while starting the call.');
      throw error;
    }
    void session.finished.then(releaseEngines);
    await session.start();
  }

  /** How a session starts a cold transfer on its carrier; undefined when the line cannot transfer (a browser, a carrier without transfers). */
  private transferOf(callId: string, record: CallRecord, line: CallLine): ((to: string) => Promise<void>) | undefined {
    const dialer = this.d.dialer;
    const carrierCallId = line.carrierCallId;
    const transfer = dialer?.transfer?.bind(dialer);
    if (!transfer || !carrierCallId) return undefined;
    const from = serviceNumberOf(record);
    return (to) => line.handOver(() => transfer({ callId, carrierCallId, to, from }));
  }

  /**
   * How a session runs a warm transfer on its carrier: the second leg is placed with a stream
   * secret made for it (`expect` keeps its hash), the bridge takes the caller's line away.
   */
  private warmTransferOf(callId: string, record: CallRecord, line: CallLine, expect: (secret: string) => void): WarmTransferCarrier | undefined {
    const dialer = this.d.dialer;
    const consult = dialer?.consult?.bind(dialer);
    const bridge = dialer?.bridge?.bind(dialer);
    const random = this.d.random;
    const carrierCallId = line.carrierCallId;
    if (!consult || !bridge || !random || !carrierCallId) return undefined;
    const from = serviceNumberOf(record);
    let consultCarrierCallId: string | null = null;
    return {
      holdAudio: () => this.holdAudio(line.sampleRate ?? INTERNAL_SAMPLE_RATE),
      async consult(to) {
        const secret = random(24);
        expect(secret);
        consultCarrierCallId = (await consult({ callId, to, from, streamSecret: secret })).carrierCallId;
      },
      async bridge() {
        const leg = consultCarrierCallId;
        if (!leg) throw new Error('no second leg to bridge');
        await line.handOver(() => bridge({ callId, carrierCallId, consultCarrierCallId: leg }));
      },
    };
  }

  /** The hold music (media/hold), at the line's rate; read once per rate. */
  private holdAudio(rate: number): Promise<Int16Array> {
    let audio = this.holdAudioByRate.get(rate);
    if (!audio) {
      // A failed read is not kept: the next transfer tries again.
      audio = readWavFile(HOLD_AUDIO_FILE, rate).then(
        (pcm) => pcm.samples,
        (error: unknown) => {
          this.holdAudioByRate.delete(rate);
          throw error;
        },
      );
      this.holdAudioByRate.set(rate, audio);
    }
    return audio;
  }

  private async finish(
    orgId: string,
    callId: string,
    agent: AgentConfig,
    metadata: LlmRequestMetadata,
    result: SessionResult,
    recorder: CallRecorder | undefined,
    tokenUsage: TokenUsage | null,
  ): Promise<void> {
    const durationMs = Math.max(0, result.endTimestamp - result.startTimestamp);
    const cost = callCost(durationMs, this.d.pricePerMinute);
    let recordingUrl: string | null = null;
    if (recorder) {
      try {
        // Block by block: a long call's WAV must not stall the other calls' audio.
        await recorder.close();
        recordingUrl = this.recordingUrl(callId);
      } catch (error) {
        this.d.log.error({ err: error, call_id: callId }, 'recording could not be written');
      }
    }
    const optOut = recorder === undefined;
    let changed = false;
    const ended = await this.d.calls.update(orgId, callId, (current) => {
      // A peer that took this node for dead may have finished the record already (calls/nodes.ts): it stands.
      if (current.call_status !== 'ongoing' && current.call_status !== 'registered') return current;
      changed = true;
      return {
        ...current,
        call_status: result.reason === 'error_service' ? 'error' : 'ended',
        disconnection_reason: result.reason,
        disconnection_message: result.message,
        start_timestamp: result.startTimestamp,
        end_timestamp: result.endTimestamp,
        duration_ms: durationMs,
        transcript: optOut ? null : result.transcript,
        transcript_with_tool_calls: optOut ? null : result.transcriptWithToolCalls,
        recording_url: recordingUrl,
        call_cost: cost,
        latency: result.latency,
        llm_token_usage: tokenUsage,
        transfer_destination: result.transfer?.destination ?? null,
        transfer_timestamp: result.transfer?.at ?? null,
      };
    });
    if (!ended || !changed) return;
    await this.d.limits.debit(orgId, cost.total_credits_used);
    this.d.log.info({ call_id: callId, reason: result.reason, duration_ms: durationMs }, 'call ended');
    this.d.events.emit('ended', { orgId, record: ended });
    if (this.d.analyze !== false) this.track(this.analyze(orgId, callId, agent, metadata, ended));
  }

  private async analyze(orgId: string, callId: string, agent: AgentConfig, metadata: LlmRequestMetadata, record: CallRecord): Promise<void> {
    const transcript = (record.transcript ?? []).map(({ role, content }) => ({ role, content }));
    const client = { dispatcher: this.d.outbound.dispatcher(LLM_CLIENT_DEFAULTS.connectTimeoutMs) };
    const analysis = await analyzeCall({ agent, transcript, metadata, logger: this.d.log, client });
    await this.d.calls.update(orgId, callId, (current) => ({ ...current, call_analysis: analysis }));
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) => this.d.log.error({ err: error }, 'post-call work failed')).finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  /** Waits for post-call work (analysis) in flight. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }
}
