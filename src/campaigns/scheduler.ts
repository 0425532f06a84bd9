// Runs campaigns and batches: claims tasks from the store (one transaction each, so peers on
// the same database never dial a task twice), places their calls through CallService, and
// counts each call when CallEvents says it ended. All its state is in the store; a crashed
// scheduler's claimed tasks are finished with error_service by whichever scheduler runs next, each
// once the node that owns its call has lost its lease too (records/nodes.ts).
import type { Logger } from 'pino';
import { newId, type Clock, type RandomHex } from '../clock.ts';
import type { CallEvents } from '../records/events.ts';
import type { CallRecord } from '../records/record.ts';
import { NoFreeSlotError, type CallService } from '../records/service.ts';
import { ApiError } from '../errors.ts';
import type { ActiveTask, CampaignRepository, CampaignRow, ClaimedTask } from './repository.ts';

export const SCHEDULER_DEFAULTS = {
  /** How often the scheduler looks for due drafts, peers' changes and orphaned tasks. */
  pollMs: 1_000,
  /** A scheduler that has not heartbeated for this long is taken to be dead. */
  leaseMs: 30_000,
} as const;

/** Repeating timers (polls and heartbeats): the one-shot, injected kind is src/timers.ts's. */
export interface IntervalTimers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const realIntervals: IntervalTimers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

export interface SchedulerOptions {
  repo: CampaignRepository;
  calls: CallService;
  events: CallEvents;
  clock: Clock;
  random: RandomHex;
  log: Logger;
  pollMs?: number;
  leaseMs?: number;
  timers?: IntervalTimers;
  /** Told of every claim, for tests that watch the order of dials. */
  onDial?: (task: ClaimedTask, campaign: CampaignRow) => void;
}

const ABANDONED = 'The service stopped while this call was under way; it was ended when the campaign resumed.';

/** A call counts as completed once it connected, whatever ended it; otherwise as failed. */
export function connected(record: CallRecord): boolean {
  return record.start_timestamp !== null;
}

export class CampaignScheduler {
  readonly instanceId: string;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly timers: IntervalTimers;
  private interval: unknown;
  private beat: unknown;
  private scheduled = false;
  private running = false;
  private kickedWhileRunning = false;
  /** The pass under way, if any: stopping waits for it before the store is let go. */
  private passing: Promise<void> = Promise.resolve();
  private stopped = true;
  private readonly inFlight = new Set<Promise<void>>();
  /** Organizations whose campaigns found no free slot in the last pass. */
  private readonly atLimit = new Set<string>();
  private readonly onEnded = ({ orgId, record }: { orgId: string; record: CallRecord }) => {
    if (!record.campaign_id && !record.batch_id) {
      // Another call of a waiting organization ended (an API, web or inbound one): its slot is free now.
      if (this.atLimit.has(orgId)) this.kick();
      return;
    }
    void this.finish(record.call_id, connected(record), record.disconnection_reason);
  };

  constructor(private readonly o: SchedulerOptions) {
    this.instanceId = newId('sched', o.random);
    this.pollMs = o.pollMs ?? SCHEDULER_DEFAULTS.pollMs;
    this.leaseMs = o.leaseMs ?? SCHEDULER_DEFAULTS.leaseMs;
    this.timers = o.timers ?? realIntervals;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.o.events.on('ended', this.onEnded);
    this.interval = this.timers.setInterval(() => this.kick(), this.pollMs);
    // The lease is renewed on a clock of its own: a long pass (a slow store, a busy process) or a
    // halt while calls drain must not let a peer take this scheduler for dead and end its calls.
    this.beat = this.timers.setInterval(() => this.heartbeat(), Math.max(this.pollMs, this.leaseMs / 3));
    this.kick();
  }

  private heartbeat(): void {
    this.o.repo
      .heartbeat(this.instanceId, this.o.clock.now())
      .catch((error: unknown) => this.o.log.warn({ err: error }, 'campaign scheduler lease not renewed; trying again'));
  }

  /** Runs a pass soon; many kicks in one tick make one pass. */
  kick(): void {
    if (this.running) this.kickedWhileRunning = true;
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.passing = this.pass();
    });
  }

  /**
   * One pass: heartbeat, due drafts, orphaned tasks, then every free slot gets a call. A task is
   * claimed only while its organization has a free slot too: at its limit the campaign waits (a
   * call's end or the next poll tries again) rather than spending tasks on concurrency_limit_reached.
   */
  async pass(): Promise<void> {
    if (this.stopped || this.running) return;
    this.running = true;
    // Kicks during this pass (a call ended, a campaign was created) ask for another one after it.
    this.kickedWhileRunning = false;
    try {
      const now = this.o.clock.now();
      await this.o.repo.heartbeat(this.instanceId, now);
      await this.o.repo.promoteDue(now);
      await this.recover(await this.o.repo.orphanedTasks(now, this.leaseMs, this.instanceId));
      await this.o.repo.expireLeases(now, this.leaseMs);
      this.atLimit.clear();
      for (const { id, orgId } of await this.o.repo.runnable()) {
        while (!this.stopped) {
          // The call dialled last holds its slot already: dial() waits until it is admitted.
          if (!(await this.o.calls.hasFreeSlot(orgId))) {
            this.atLimit.add(orgId);
            break;
          }
          const claimed = await this.o.repo.claim(id, this.instanceId, newId('call', this.o.random));
          if (!claimed) break;
          if (!(await this.dial(orgId, claimed.campaign, claimed.task))) {
            this.atLimit.add(orgId);
            break;
          }
        }
      }
    } catch (error) {
      this.o.log.error({ err: error }, 'campaign scheduler pass failed');
    } finally {
      this.running = false;
      if (this.kickedWhileRunning) this.kick();
    }
  }

  /** Claims no more tasks (shutdown begins); calls under way go on and are still counted. */
  halt(): void {
    this.stopped = true;
    this.timers.clearInterval(this.interval);
  }

  /** Stops for good: the tasks this scheduler still holds end with error_service (their calls too). */
  async stop(): Promise<void> {
    if (!this.o.events.listeners('ended').includes(this.onEnded)) return;
    this.halt();
    await this.passing;
    await Promise.allSettled([...this.inFlight]);
    await this.recover(await this.o.repo.tasksOf(this.instanceId));
    this.o.events.off('ended', this.onEnded);
    this.timers.clearInterval(this.beat);
    await this.o.repo.dropLease(this.instanceId);
  }

  /**
   * Resolves once the call holds its slot (or was refused), false when the organization had no slot
   * after all (the task waits again); its dialing goes on in the background.
   */
  private async dial(orgId: string, campaign: CampaignRow, task: ClaimedTask): Promise<boolean> {
    this.o.onDial?.(task, campaign);
    const failed = async (error: unknown): Promise<void> => {
      if (error instanceof NoFreeSlotError) {
        // Another process took the organization's last slot since this pass looked: the task waits again.
        await this.o.repo.unclaim(task.callId);
        this.atLimit.add(orgId);
        return;
      }
      // The call record was never written (the agent could not be resolved, or the store failed).
      if (error instanceof ApiError && error.code === 'NOT_FOUND') {
        this.o.log.warn(
          { campaign_id: campaign.id, agent_id: campaign.agentId },
          'the campaign agent no longer exists; the campaign fails',
        );
        await this.o.repo.fail(campaign.id, this.o.clock.now());
      } else {
        this.o.log.error(
          { err: error, campaign_id: campaign.id, call_id: task.callId },
          'placing a campaign call failed',
        );
      }
      await this.finish(task.callId, false, 'error_service');
    };
    const started = this.o.calls.startOutbound(orgId, {
      callId: task.callId,
      agentId: campaign.agentId,
      agentVersion: campaign.agentVersion,
      from: campaign.fromNumber,
      to: task.callTo,
      presentationNumber: task.presentationNumber ?? campaign.presentationNumber,
      metadata: task.metadata,
      dynamicVariables: task.dynamicVariables,
      waitForSlot: true,
      ...(campaign.kind === 'batch' ? { batchId: campaign.id } : { campaignId: campaign.id }),
    });
    const work = started
      .then(({ placed }) => placed)
      .then(
        () => undefined,
        (error: unknown) => failed(error),
      )
      .catch((error: unknown) =>
        this.o.log.error({ err: error, call_id: task.callId }, 'a campaign call could not be put right'),
      )
      .finally(() => {
        this.inFlight.delete(work);
      });
    this.inFlight.add(work);
    return started.then(
      () => true,
      (error: unknown) => !(error instanceof NoFreeSlotError),
    );
  }

  private async finish(callId: string, wasConnected: boolean, reason: string | null): Promise<void> {
    try {
      const campaign = await this.o.repo.finishTask(callId, wasConnected, reason, this.o.clock.now());
      if (campaign && campaign.finishedAt !== null) {
        this.o.log.info(
          {
            campaign_id: campaign.id,
            status: campaign.status,
            completed: campaign.completedCalls,
            failed: campaign.failedCalls,
          },
          'campaign finished',
        );
      }
    } catch (error) {
      this.o.log.error({ err: error, call_id: callId }, 'counting a campaign call failed');
    }
    this.kick();
  }

  private async recover(tasks: ActiveTask[]): Promise<void> {
    for (const task of tasks) {
      if (!task.callId) continue; // claim and call_id are written together; a task has both
      const record = await this.o.calls.endAbandoned(task.callId, ABANDONED);
      // The node serving the call still holds its lease (only its scheduler looked dead): the call
      // goes on, and its end counts the task wherever it ends.
      if (record && (record.call_status === 'registered' || record.call_status === 'ongoing')) continue;
      if (!record) {
        // Claimed, but its scheduler died before the call was written: it was never dialed, so it waits again.
        await this.o.repo.unclaim(task.callId);
        this.o.log.warn(
          { campaign_id: task.campaignId, call_id: task.callId },
          'a task claimed by a scheduler that stopped before dialing it waits again',
        );
        continue;
      }
      this.o.log.warn(
        { campaign_id: task.campaignId, call_id: task.callId },
        'finishing a task whose scheduler stopped',
      );
      // endAbandoned's 'ended' event counts it when the record changed; otherwise count it here.
      await this.o.repo.finishTask(
        task.callId,
        connected(record),
        record.disconnection_reason ?? 'error_service',
        this.o.clock.now(),
      );
    }
  }
}
