// Carrier accounts through the API: created, read, changed, deleted and listed within one organization. New
// credentials are tried against the carrier first where it offers a cheap authenticated request (Twilio: the
// carriers room's check), so a broken account is a 400 naming the field, never stored. An account with a call
// under way cannot be deleted (409 naming the calls): that call's hang-up, transfer and callbacks need its keys.
import type { z } from 'zod';
import { newId, type Clock, type RandomHex } from '../clock.ts';
import { claimingNumbers } from '../agents/service.ts';
import { ApiError, notFound } from '../errors.ts';
import { type CarrierAccountPage, type CarrierAccountRepository } from './repository.ts';
import {
  CARRIER_CREDENTIALS,
  type CarrierAccount,
  type CarrierCredentials,
  type CarrierName,
  type CreateCarrierAccount,
  type ListCarrierAccountsQuery,
  type PatchCarrierAccount,
} from './schema.ts';

/** Tries credentials at the carrier; throws ApiError (400 naming `body.credentials.<field>`) when they do not work. */
export type CarrierAccountCheck = (credentials: CarrierCredentials) => Promise<void>;

export interface CarrierAccountServiceDeps {
  repo: CarrierAccountRepository;
  clock: Clock;
  random: RandomHex;
  /** The carriers whose credentials can be tried on create; the others are stored as given. */
  checks: Partial<Record<CarrierName, CarrierAccountCheck>>;
}

export class CarrierAccountService {
  constructor(private readonly d: CarrierAccountServiceDeps) {}

  async create(orgId: string, body: CreateCarrierAccount): Promise<CarrierAccount> {
    await this.d.checks[body.carrier]?.(body.credentials);
    const now = this.d.clock.now();
    const account: CarrierAccount = {
      carrier_account_id: newId('cacct', this.d.random),
      carrier: body.carrier,
      name: body.name,
      numbers: body.numbers,
      credentials: body.credentials,
      created_at: now,
      updated_at: now,
    };
    await claimingNumbers('body.numbers', () => this.d.repo.insert(orgId, account));
    return account;
  }

  async get(orgId: string, id: string): Promise<CarrierAccount> {
    const found = await this.d.repo.get(orgId, id);
    if (!found) throw notFound('carrier account', id);
    return found;
  }

  /** The given fields replace the stored ones; the carrier stays (an account elsewhere is another account). */
  async patch(orgId: string, id: string, body: PatchCarrierAccount): Promise<CarrierAccount> {
    const current = await this.get(orgId, id);
    let credentials = current.credentials;
    if (body.credentials !== undefined) {
      credentials = this.credentialsOf(current.carrier, body.credentials);
      await this.d.checks[current.carrier]?.(credentials);
    }
    const next: CarrierAccount = {
      ...current,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.numbers !== undefined ? { numbers: body.numbers } : {}),
      credentials,
      updated_at: this.d.clock.now(),
    };
    const updated = await claimingNumbers('body.numbers', () => this.d.repo.update(orgId, next));
    if (!updated) throw notFound('carrier account', id);
    return next;
  }

  async delete(orgId: string, id: string): Promise<void> {
    await this.get(orgId, id);
    const live = await this.d.repo.liveCalls(orgId, id);
    if (live.length > 0) {
      throw new ApiError(
        'CARRIER_ACCOUNT_IN_USE',
        `carrier account ${id} cannot be deleted while calls go through it: ${live.join(', ')}; delete it once they have ended`,
      );
    }
    if (!(await this.d.repo.delete(orgId, id))) throw notFound('carrier account', id);
  }

  list(orgId: string, query: ListCarrierAccountsQuery): Promise<CarrierAccountPage> {
    return this.d.repo.list(orgId, query);
  }

  /** A PATCH's credentials, read as the account's carrier's: 400 naming each field that does not fit. */
  private credentialsOf(carrier: CarrierName, given: unknown): CarrierCredentials {
    const parsed = (CARRIER_CREDENTIALS[carrier] as z.ZodType<CarrierCredentials>).safeParse(given);
    if (parsed.success) return parsed.data;
    throw new ApiError(
      'BAD_REQUEST',
      parsed.error.issues
        .map((issue) => `body.credentials${issue.path.map((p) => `.${String(p)}`).join('')}: ${issue.message}`)
        .concat(`(the account is a ${carrier} account: give its ${carrier} credentials, all of them)`)
        .join('; '),
    );
  }
}
