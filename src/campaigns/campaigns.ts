// The campaigns room, built from config: the API service for campaigns and batches, and the
// scheduler that dials their tasks through the call service.
import type { Logger } from 'pino';
import type { AgentService } from '../agents/service.ts';
import type { CallEvents } from '../records/events.ts';
import type { CallService } from '../records/service.ts';
import type { Clock, RandomHex } from '../clock.ts';
import type { Config } from '../config.ts';
import type { CampaignRepository } from './repository.ts';
import { CampaignScheduler } from './scheduler.ts';
import { CampaignService } from './service.ts';

export interface Campaigns {
  service: CampaignService;
  scheduler: CampaignScheduler;
}

export function createCampaigns(
  config: Config,
  deps: {
    repo: CampaignRepository;
    agents: AgentService;
    calls: CallService;
    events: CallEvents;
    clock: Clock;
    random: RandomHex;
    logger: Logger;
  },
): Campaigns {
  const scheduler = new CampaignScheduler({
    repo: deps.repo,
    calls: deps.calls,
    events: deps.events,
    clock: deps.clock,
    random: deps.random,
    log: deps.logger.child({ component: 'scheduler' }),
    pollMs: config.schedulerPollMs,
    leaseMs: config.schedulerLeaseMs,
  });
  const service = new CampaignService(
    deps.repo,
    deps.agents,
    deps.clock,
    deps.random,
    { maxTasks: config.maxTasks, batchConcurrency: config.batchConcurrency },
    () => scheduler.kick(),
    (orgId, to, from, presentationNumber) => deps.calls.checkCallerId(orgId, to, from, presentationNumber),
  );
  return { service, scheduler };
}
