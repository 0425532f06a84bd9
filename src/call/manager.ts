// Runs calls: when a transport connects for a registered call, it builds the session (agent
// version, engines, model, tools, recorder), and it keeps the call record in step — written
// at registration, updated as the call connects, finalized exactly once.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CredentialUnavailableError, withCredentials, type CredentialLookup } from '../agents/credentials.ts';
import type { AgentRepository } from '../agents/repository.ts';
import { voicemailHandling, type AgentVersion, type VoicemailHandling } from '../agents/schema.ts';
import { INTERNAL_SAMPLE_RATE } from '../audio/pcm.ts';
import { readWavFile } from '../audio/wav.ts';
import type { Dialer } from '../records/dialer.ts';
import type { CallEvents } from '../records/events.ts';
import { llmMetadataOf, type CallRecord } from '../records/record.ts';
import type { CallRepository } from '../records/repository.ts';
import { ADMISSION_MESSAGES, type CallService } from '../records/service.ts';
import type { RandomHex } from '../clock.ts';
import { fillVariables } from '../llm/prompt.ts';
import type { OutboundHttp } from '../net/http.ts';
import { webSocketOpener } from '../net/websocket.ts';
import type { SpeechEngineProvider } from '../speech/types.ts';
import type { Timers } from '../timers.ts';
import type { ToolRun } from '../tools/executor.ts';
import { McpCatalog } from '../tools/mcp/catalog.ts';
import { PacerWakeups } from './agent/pacer.ts';
import type { OrgLimits } from './limits.ts';
import { CallLine } from './line.ts';
import { callChains } from './provider-chains.ts';
import { CallProviders, FALLBACK_DEFAULTS } from './providers.ts';
import { agentModelOf } from './realtime/agent-model.ts';
import { RecordFinisher } from './record-finish.ts';
import { CallRecorder } from './recorder.ts';
import type { ActiveCall, CallRegistry } from './registry.ts';
import { CallSession } from './session.ts';
import { TransferReports } from './transfer/carrier.ts';
import type { ColdTransfer } from './transfer/transfer-flow.ts';
import type { WarmTransferCarrier } from './transfer/warm-transfer.ts';
import type { CallTransport } from './transport.ts';

/** What a caller on hold for a warm transfer hears (scripts/make-hold-audio.ts makes it). */
const HOLD_AUDIO_FILE = join(import.meta.dirname, '..', '..', 'media', 'hold', 'hold-chime.8k.wav');

/**
 * The number a transfer's destination sees: this service's side of the call, the number called (inbound) or calling
 * (outbound).
 */
function serviceNumberOf(record: CallRecord): string | null {
  return record.call_type === 'inbound' ? record.call_to : (record.presentation_number ?? record.call_from);
}

/** The agent's voicemail handling with its message's dynamic variables filled in. */
function filledVoicemail(
  handling: VoicemailHandling | null,
  variables: Record<string, string>,
): VoicemailHandling | null {
  return handling?.message ? { ...handling, message: fillVariables(handling.message, variables) } : handling;
}

export interface CallManagerDeps {
  calls: CallRepository;
  callService: CallService;
  agents: AgentRepository;
  events: CallEvents;
  registry: CallRegistry;
  limits: OrgLimits;
  /**
   * The organization's provider credentials by name: an agent's named ones are resolved into its engines' and model's
   * api_key and base_url as its call starts. Absent: none is found, and a call whose agent names one ends.
   */
  credentials?: CredentialLookup | undefined;
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
  private readonly records: RecordFinisher;
  private readonly holdAudioByRate = new Map<number, Promise<Int16Array>>();
  /** MCP servers' tool listings, shared by every call of the service. */
  private readonly mcpCatalog: McpCatalog;
  /** Every call's outbound pacer; the media routes run its overdue wake-ups after each inbound message. */
  readonly pacerWakeups: PacerWakeups;

  constructor(private readonly d: CallManagerDeps) {
    this.pacerWakeups = new PacerWakeups(d.timers);
    this.mcpCatalog = new McpCatalog(() => d.timers.now());
    this.records = new RecordFinisher({ ...d, recordingUrl: (callId) => this.recordingUrl(callId) });
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
    const admitted = await this.admit(orgId, callId, transport);
    if (!admitted) return;
    const { record, version } = admitted;
    const guard = await this.d.limits.guard(orgId);
    const agent = version.config;
    const log = this.d.log.child({ call_id: callId, org_id: orgId });
    const metadata = llmMetadataOf(record, version.version);
    const variables = metadata.dynamic_variables;
    // Engines and recorder take the line's own rate (8 kHz on a phone): no resampling per frame.
    const sampleRate = transport.sampleRate ?? INTERNAL_SAMPLE_RATE;
    const recorder = record.opt_out_sensitive_data_storage
      ? undefined
      : new CallRecorder(this.recordingPath(callId), sampleRate);
    let finalized: Promise<void> = Promise.resolve();
    const toolFinished = (run: ToolRun): void => {
      if (run.latencyMs !== null)
        this.d.events.emit('tool', {
          orgId,
          callId,
          name: run.invocation.name,
          ms: run.latencyMs,
          ok: run.failure === null,
        });
    };
    // Each recogniser, voice and model in the agent's order; a move to the next is logged and counted.
    const providers = new CallProviders(
      () => this.d.timers.now(),
      (change) => {
        log.warn(
          { kind: change.kind, from: change.from, to: change.to, reason: change.reason },
          'provider failed; the call moved to the next one',
        );
        this.d.events.emit('fallback', { orgId, callId, change });
      },
    );
    // Leased on first use until the session has finished: the provider closes idle engines to stay bounded, never
    // one a call holds.
    const chains = callChains(agent, this.d.engines, providers);
    const systemPrompt = fillVariables(agent.system_prompt, variables);
    const model = agentModelOf({
      agent,
      metadata,
      outbound: this.d.outbound,
      transportKind: transport.kind,
      toolFinished,
      mcp: {
        catalog: this.mcpCatalog,
        timers: this.d.timers,
        log,
        unreachable: () => this.d.events.emit('mcp_unreachable', { orgId, callId }),
      },
      models: chains.llm,
      instructions: systemPrompt,
      lineRate: sampleRate,
      timers: this.d.timers,
      openWebSocket: webSocketOpener(this.d.outbound.policy),
      warn: (message, details) => log.warn(details, message),
    });
    const releaseEngines = (): void => {
      chains.release();
      void model.close();
    };
    let session: CallSession;
    const reports = new TransferReports(() => session.transfer, transport, this.d.random);
    try {
      const carrier = transferCarrierOf(
        { dialer: this.d.dialer, random: this.d.random, holdAudio: (rate: number) => this.holdAudio(rate) },
        callId,
        record,
        transport,
        reports,
      );
      session = new CallSession({
        callId,
        agent: { ...agent, begin_message: fillVariables(agent.begin_message, variables) },
        systemPrompt,
        transport: model.line(transport),
        timers: this.d.timers,
        pacerWakeups: this.pacerWakeups,
        engines: {
          openVad: () => this.d.engines.vad.open({ sampleRate }),
          // Phone audio is 8 kHz at heart: the recogniser's telephone-band model hears it as it came.
          openStt: async (events) => {
            const { config, engine } = chains.stt.current;
            return engine().open({
              sampleRate,
              // A recogniser that takes μ-law hears the phone's own bytes (a streaming provider).
              ...(transport.lineEncoding ? { lineEncoding: transport.lineEncoding } : {}),
              language: config.language,
              ...(config.phrases ? { phrases: config.phrases } : {}),
              events,
            });
          },
          sttFailed: (reason) => chains.stt.fail(reason),
          sttFinalDeadlineMs: () => (chains.stt.hasNext ? FALLBACK_DEFAULTS.sttFinalMs : null),
          tts: chains.voice.current.engine(),
          voices: chains.voice,
        },
        providers,
        brain: model.brain,
        modelTurns: model.turnTaking,
        recorder,
        log,
        transfer: carrier.cold,
        // Never awaited here: a stream that hangs up before the session attaches would go unheard.
        warmTransfer: carrier.warm,
        outbound: record.call_type === 'outbound',
        // Only a call the agent placed can reach an answering machine.
        voicemail: record.call_type === 'outbound' ? filledVoicemail(voicemailHandling(agent), variables) : null,
        ...(guard ? { guard } : {}),
        // Kept as it is said: after a crash the record still holds everything up to it.
        onTranscript: recorder
          ? (messages, items) => {
              // The store keeps a call's writes in the order they were asked for (CallRepository.keepTranscript).
              this.d.calls
                .keepTranscript(orgId, callId, [...messages], [...items])
                .catch((error: unknown) => log.error({ err: error }, 'transcript could not be kept'));
            }
          : undefined,
        onTurnLatency:
          this.d.events.listenerCount('turn') > 0
            ? (parts) => this.d.events.emit('turn', { orgId, callId, parts })
            : undefined,
        onEnd: (result) => {
          const ended = { orgId, callId, agent, metadata, result, recorder, tokenUsage: model.usage() };
          finalized = this.records
            .finish(ended)
            .catch((error: unknown) => log.error({ err: error }, 'call record could not be finalized'));
        },
      });
      // The record is final only once the recording is written too.
      const active = activeCallOf(session, reports, {
        callId,
        orgId,
        callType: record.call_type,
        finished: session.finished.then(() => finalized),
      });
      this.d.registry.add(active);
      const startTimestamp = this.d.timers.now();
      const started = await this.d.calls.update(orgId, callId, (current) => ({
        ...current,
        call_status: 'ongoing',
        start_timestamp: startTimestamp,
      }));
      if (started) this.d.events.emit('started', { orgId, record: started });
      transport.notify({ type: 'call_started', call_id: callId, agent_name: agent.agent_name });
      log.info(
        { agent_id: record.agent_id, agent_version: version.version, transport: transport.kind },
        'call connected',
      );
    } catch (error) {
      // The session was never started and may never finish: the leases go back now, and a call still
      // registered ends (freeing its slot) rather than waiting for a stream that already came.
      releaseEngines();
      await this.d.callService.endUnconnected(
        orgId,
        callId,
        'error',
        'error_service',
        'The service failed while starting the call.',
      );
      throw error;
    }
    void session.finished.then(() => {
      releaseEngines();
    });
    await session.start();
  }

  /**
   * The call's record and agent version if the call may run now; otherwise the line is closed (and the record ended)
   * and null.
   */
  private async admit(
    orgId: string,
    callId: string,
    transport: CallLine,
  ): Promise<{ record: CallRecord; version: AgentVersion } | null> {
    const record = await this.d.calls.get(orgId, callId);
    if (!record || record.call_status !== 'registered') {
      transport.close('error_service');
      return null;
    }
    const version =
      record.agent_version === null ? undefined : await this.d.agents.get(orgId, record.agent_id, record.agent_version);
    if (!version) {
      await this.d.callService.endUnconnected(
        orgId,
        callId,
        'error',
        'error_service',
        `agent ${record.agent_id} version ${record.agent_version} no longer exists`,
      );
      transport.close('error_service');
      return null;
    }
    // Resolved in memory for this call only: the agent version and the record keep the credential's name, not its key.
    let config: AgentVersion['config'];
    try {
      config = await withCredentials(orgId, version.config, this.d.credentials ?? (() => Promise.resolve(undefined)));
    } catch (error) {
      if (!(error instanceof CredentialUnavailableError)) throw error;
      this.d.log.warn({ call_id: callId, org_id: orgId, code: error.code }, error.message);
      await this.d.callService.endUnconnected(orgId, callId, 'error', 'flow_error', error.message);
      transport.close('flow_error');
      return null;
    }
    // A call admitted at registration already holds its slot; one that found none is admitted now or refused.
    // Whichever node the stream reached serves the call, and a peer finishes it only if this node dies.
    const refused = await this.d.limits.admit(orgId, callId, this.d.nodeId);
    if (refused) {
      await this.d.callService.endUnconnected(orgId, callId, 'not_connected', refused, ADMISSION_MESSAGES[refused]);
      transport.close(refused);
      return null;
    }
    return { record, version: { ...version, config } };
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

  /** Waits for post-call work (analysis) in flight. */
  async idle(): Promise<void> {
    await this.records.idle();
  }
}

/** What the carrier adapter is built from: the carrier's REST (dialer), stream secrets, hold music. */
export interface TransferCarrierDeps {
  dialer: Dialer | undefined;
  random: RandomHex | undefined;
  holdAudio(rate: number): Promise<Int16Array>;
}

/**
 * The carrier adapter of one call: how its session transfers cold (the carrier redirects the
 * caller to `to`) and warm (a second leg placed with a stream secret made for it, which `reports`
 * expects; the bridge takes the caller's line away). Each is undefined when the line cannot
 * (a browser, a carrier without transfers).
 */
function transferCarrierOf(
  d: TransferCarrierDeps,
  callId: string,
  record: CallRecord,
  line: CallLine,
  reports: TransferReports,
): { cold: ColdTransfer | undefined; warm: WarmTransferCarrier | undefined } {
  const { dialer, random } = d;
  const carrierCallId = line.carrierCallId;
  const from = serviceNumberOf(record);
  const transfer = dialer?.transfer?.bind(dialer);
  const cold: ColdTransfer | undefined =
    transfer && carrierCallId ? (to) => line.handOver(() => transfer({ callId, carrierCallId, to, from })) : undefined;
  const consult = dialer?.consult?.bind(dialer);
  const bridge = dialer?.bridge?.bind(dialer);
  if (!consult || !bridge || !random || !carrierCallId) return { cold, warm: undefined };
  let consultCarrierCallId: string | null = null;
  const warm: WarmTransferCarrier = {
    holdAudio: () => d.holdAudio(line.sampleRate ?? INTERNAL_SAMPLE_RATE),
    async consult(to) {
      const secret = random(24);
      reports.expectConsult(secret);
      consultCarrierCallId = (await consult({ callId, to, from, streamSecret: secret })).carrierCallId;
    },
    async bridge() {
      const leg = consultCarrierCallId;
      if (!leg) throw new Error('no second leg to bridge');
      await line.handOver(() => bridge({ callId, carrierCallId, consultCarrierCallId: leg }));
    },
  };
  return { cold, warm };
}

/** The call as the registry keeps it: what the API and the carrier may ask of its session while it runs. */
function activeCallOf(
  session: CallSession,
  reports: TransferReports,
  call: Pick<ActiveCall, 'callId' | 'orgId' | 'callType' | 'finished'>,
): ActiveCall {
  return {
    ...call,
    requestEnd: (reason, message, options) =>
      session.end(reason, { ...(message ? { message } : {}), ...(options?.now ? { now: true } : {}) }),
    say: (text, interrupt) => session.speak(text, interrupt),
    addContext: (content) => session.addContext(content),
    listen: (listener) => session.listen(listener),
    voicemailDetected: () => session.carrierFoundMachine(),
    transferAnswered: () => reports.transferAnswered(),
    transferFailed: (why) => reports.transferFailed(why),
    returnStream: (secret, next) => reports.returnStream(secret, next),
    consultFailed: (why) => reports.consultFailed(why),
    carrierEnded: () => reports.carrierEnded(),
  };
}
