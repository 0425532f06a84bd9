// A scheduler over a real SQLite store and a real CallService, with a dialer the test drives:
// every dialed call waits until the test answers, fails or hangs it up. With an organization
// limit, the call service admits calls through the real OrgLimits and CallRegistry.
import pino from 'pino';
import { OrgLimits } from '../../src/call/limits.ts';
import { CallRegistry } from '../../src/call/registry.ts';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { AgentService } from '../../src/agents/service.ts';
import { CampaignScheduler } from '../../src/campaigns/scheduler.ts';
import { CampaignService } from '../../src/campaigns/service.ts';
import { CallEvents } from '../../src/records/events.ts';
import { CallService } from '../../src/records/service.ts';
import type { Clock } from '../../src/clock.ts';
import type { DialRequest, DialResult, Dialer } from '../../src/records/dialer.ts';
import { SqliteAgentRepository } from '../../src/store/agents.ts';
import { SqliteCallRepository } from '../../src/store/calls.ts';
import { SqliteCampaignRepository } from '../../src/store/campaigns.ts';
import { SqliteCreditRepository } from '../../src/store/credits.ts';
import { openDatabase, type Db } from '../../src/store/database.ts';
import { promised } from '../../src/store/promised.ts';
import { testSecretBox } from '../helpers/secrets.ts';

export class ManualClock implements Clock {
  constructor(public t = Date.UTC(2026, 10, 22, 12, 0, 0)) {}
  now(): number {
    return this.t;
  }
}

export class ControlledDialer implements Dialer {
  readonly name = 'controlled';
  readonly dialed: DialRequest[] = [];
  /** Answers dial() for numbers listed here at once with a failure. */
  readonly refuse = new Set<string>();

  /** A stand-in network: no caller id to check. */
  showsCallerId(): boolean {
    return false;
  }

  async dial(request: DialRequest): Promise<DialResult> {
    this.dialed.push(request);
    if (this.refuse.has(request.to)) return { status: 'failed', reason: 'dial_failed', message: 'refused' };
    return { status: 'dialing', carrierCallId: `CA${request.callId}` };
  }
}

let seq = 0;
const hex = (n: number) => (seq++).toString(16).padStart(n * 2, '0');

export interface Harness {
  db: Db;
  agents: AgentService;
  clock: ManualClock;
  dialer: ControlledDialer;
  calls: CallService;
  callRepo: SqliteCallRepository;
  events: CallEvents;
  /**
   * The calls of this process and the limits that count them (real ones; unlimited unless maxConcurrentCalls is given).
   */
  registry: CallRegistry;
  limits: OrgLimits;
  campaigns: CampaignService;
  repo: SqliteCampaignRepository;
  newScheduler(options?: { leaseMs?: number }): CampaignScheduler;
  /** The call connects (a session would do this). */
  answer(callId: string): void;
  /** A connected call ends. */
  hangUp(callId: string): void;
  /** The carrier reports that nobody answered. */
  noAnswer(callId: string): Promise<void>;
}

const noInterval = { setInterval: () => 0, clearInterval: () => undefined };

/** `nodeId`: the node (records/nodes.ts) that owns the calls this harness places. */
export async function createHarness(
  file = ':memory:',
  options: { maxConcurrentCalls?: number; nodeId?: string } = {},
): Promise<Harness> {
  const db = openDatabase(file);
  const clock = new ManualClock();
  const log = pino({ level: 'silent' });
  const agents = new AgentService(promised(new SqliteAgentRepository(db, testSecretBox())), clock);
  if (!(await agents.list('acme')).some((a) => a.agentId === 'bot')) {
    await agents.create(
      'acme',
      'bot',
      AgentConfigSchema.parse({
        agent_name: 'Bot',
        llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm', temperature: 1, stream: true },
      }),
    );
  }
  const dialer = new ControlledDialer();
  const events = new CallEvents();
  const callRepo = new SqliteCallRepository(db);
  const registry = new CallRegistry();
  const limits = new OrgLimits(
    { credits: promised(new SqliteCreditRepository(db)), calls: promised(callRepo) },
    { maxConcurrentCalls: options.maxConcurrentCalls ?? 0, orgLimits: {}, pricePerMinute: 0, now: () => clock.now() },
  );
  const calls = new CallService(promised(callRepo), agents, dialer, clock, hex, log, events, limits, options.nodeId);
  const repo = new SqliteCampaignRepository(db);
  const schedulers: CampaignScheduler[] = [];
  const campaigns = new CampaignService(promised(repo), agents, clock, hex, { maxTasks: 50, batchConcurrency: 3 }, () =>
    schedulers.forEach((s) => s.kick()),
  );
  return {
    db,
    agents,
    clock,
    dialer,
    calls,
    callRepo,
    events,
    registry,
    limits,
    campaigns,
    repo,
    newScheduler(options = {}) {
      const scheduler = new CampaignScheduler({
        repo: promised(repo),
        calls,
        events,
        clock,
        random: hex,
        log,
        timers: noInterval,
        ...options,
      });
      schedulers.push(scheduler);
      return scheduler;
    },
    answer(callId) {
      const record = callRepo.update('acme', callId, (r) => ({
        ...r,
        call_status: 'ongoing',
        start_timestamp: clock.now(),
      }));
      events.emit('started', { orgId: 'acme', record: record! });
    },
    hangUp(callId) {
      const record = callRepo.update('acme', callId, (r) => ({
        ...r,
        call_status: 'ended',
        disconnection_reason: 'user_hangup',
        end_timestamp: clock.now(),
        duration_ms: clock.now() - r.start_timestamp!,
      }));
      events.emit('ended', { orgId: 'acme', record: record! });
    },
    async noAnswer(callId) {
      await calls.endIfRegistered(callId, 'not_connected', 'dial_no_answer', 'nobody answered');
    },
  };
}

/** Lets pending dials, events and scheduler passes run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

export const tasks = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    callTo: `+1415555${String(i).padStart(4, '0')}`,
    presentationNumber: null,
    metadata: { row: i },
    dynamicVariables: { name: `Person ${i}` },
  }));
