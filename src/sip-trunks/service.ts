// SIP trunks through the API: created, read, changed, deleted and listed within one organization. A number taken
// elsewhere is a 409 NUMBER_TAKEN naming it, as for agents and carrier accounts.
import { newId, type Clock, type RandomHex } from '../clock.ts';
import { claimingNumbers } from '../agents/service.ts';
import { notFound } from '../errors.ts';
import { type SipTrunkPage, type SipTrunkRepository } from './repository.ts';
import type { CreateSipTrunk, ListSipTrunksQuery, PatchSipTrunk, SipTrunk } from './schema.ts';

export interface SipTrunkServiceDeps {
  repo: SipTrunkRepository;
  clock: Clock;
  random: RandomHex;
}

export class SipTrunkService {
  constructor(private readonly d: SipTrunkServiceDeps) {}

  async create(orgId: string, body: CreateSipTrunk): Promise<SipTrunk> {
    const now = this.d.clock.now();
    const trunk: SipTrunk = {
      sip_trunk_id: newId('siptrunk', this.d.random),
      name: body.name,
      numbers: body.numbers,
      inbound: body.inbound,
      ...(body.outbound ? { outbound: body.outbound } : {}),
      created_at: now,
      updated_at: now,
    };
    await claimingNumbers('body.numbers', () => this.d.repo.insert(orgId, trunk));
    return trunk;
  }

  async get(orgId: string, id: string): Promise<SipTrunk> {
    const found = await this.d.repo.get(orgId, id);
    if (!found) throw notFound('SIP trunk', id);
    return found;
  }

  async patch(orgId: string, id: string, body: PatchSipTrunk): Promise<SipTrunk> {
    const { outbound: _outbound, ...current } = await this.get(orgId, id);
    const outbound = body.outbound === undefined ? _outbound : (body.outbound ?? undefined);
    const next: SipTrunk = {
      ...current,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.numbers !== undefined ? { numbers: body.numbers } : {}),
      ...(body.inbound !== undefined ? { inbound: body.inbound } : {}),
      ...(outbound ? { outbound } : {}),
      updated_at: this.d.clock.now(),
    };
    const updated = await claimingNumbers('body.numbers', () => this.d.repo.update(orgId, next));
    if (!updated) throw notFound('SIP trunk', id);
    return next;
  }

  async delete(orgId: string, id: string): Promise<void> {
    if (!(await this.d.repo.delete(orgId, id))) throw notFound('SIP trunk', id);
  }

  list(orgId: string, query: ListSipTrunksQuery): Promise<SipTrunkPage> {
    return this.d.repo.list(orgId, query);
  }
}
