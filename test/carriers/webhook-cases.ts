// The cases every carrier's inbound webhook answers the same way against the real service, written once: a request
// unsigned, signed with another key, or changed after it was signed is refused 403 and registers no call, as is one
// signed right for a number no account of the carrier holds; a signed one registers one inbound call and answers a
// stream to the carrier's media route carrying the call's id and secret, and the same answer when sent again; and
// a cold transfer to a busy destination brings the caller back to the agent. Each carrier's webhook test file gives
// its own WebhookCarrier (how it sends, signs and reads its answer) and keeps the cases that are its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TwilioStreamCaller } from '../../src/carriers/sim/twilio-stream.ts';
import type { CallRecord } from '../../src/records/record.ts';
import { DEMO_TRANSFER_FAILED } from '../../src/demo/script.ts';
import { agentFinished, fixtureUlaw } from '../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';

/** A webhook's parameters: a form's fields or a JSON object's, all strings. */
export type WebhookBody = Record<string, string>;

/** What the stream in a carrier's answer names: the media route's path, the call and its secret. */
export interface AnsweredStream {
  path: string;
  callId: string;
  secret: string;
}

export interface WebhookCarrier {
  /** The carrier's name in test names: "Telnyx". */
  readonly name: string;
  /** Its media route, where the answer's stream must lead: "/media/telnyx". */
  readonly mediaPath: string;
  readonly service: () => TestService;
  /** The number the carrier account holds and the desk agent answers. */
  readonly number: string;
  /** A number the desk agent answers that no account of the carrier holds; absent where numbers need no account. */
  readonly elsewhere?: string;
  /** The agent that answers `number`. */
  readonly agentId: string;
  /** A new inbound call's webhook to `to`, from +14155550100 (a fresh call id each time). */
  readonly body: (to: string) => WebhookBody;
  /** The same webhook with the caller changed: what a signature must cover. */
  readonly changed: (body: WebhookBody) => WebhookBody;
  /** Sends `body` with `headers` to the voice webhook. */
  readonly send: (body: WebhookBody, headers: Record<string, string>) => Promise<Response>;
  /** Headers signing `body` as the account signs it, or with another key. */
  readonly sign: (body: WebhookBody, key: 'account' | 'another') => Promise<Record<string, string>>;
  /** Checks the carrier's own markup of a signed answer and reads its stream. */
  readonly streamOf: (answer: string, res: Response) => AnsweredStream;
  /** What the inbound call's record holds beside its type, number and agent (the carrier's call id). */
  readonly recordOf?: (body: WebhookBody) => Record<string, unknown>;
}

const callCount = async (t: TestService) =>
  ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count;

const REFUSED: { rule: string; send: (c: WebhookCarrier) => Promise<Response> }[] = [
  { rule: 'unsigned', send: (c) => c.send(c.body(c.number), {}) },
  {
    rule: 'signed with another key',
    send: async (c) => {
      const body = c.body(c.number);
      return c.send(body, await c.sign(body, 'another'));
    },
  },
  {
    rule: 'changed after it was signed',
    send: async (c) => {
      const body = c.body(c.number);
      return c.send(c.changed(body), await c.sign(body, 'account'));
    },
  },
  {
    rule: 'signed right, for a number no account of the carrier holds',
    send: async (c) => {
      const body = c.body(c.elsewhere!);
      return c.send(body, await c.sign(body, 'account'));
    },
  },
];

/** Registers the shared inbound webhook cases for `carrier`. */
export function webhookCases(carrier: WebhookCarrier): void {
  describe(`${carrier.name} voice webhook`, () => {
    for (const { rule, send } of REFUSED) {
      if (rule.includes('no account') && !carrier.elsewhere) continue;
      it(`is refused 403, and registers no call, ${rule}`, async () => {
        const t = carrier.service();
        const before = await callCount(t);
        const res = await send(carrier);
        expect(res.status).toBe(403);
        expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' });
        expect(await callCount(t)).toBe(before);
      });
    }

    it('a signed webhook registers one inbound call and answers a stream to the media route carrying its call_id and secret; sent again, the same answer', async () => {
      const t = carrier.service();
      const before = await callCount(t);
      const body = carrier.body(carrier.number);
      const first = await carrier.send(body, await carrier.sign(body, 'account'));
      expect(first.status).toBe(200);
      const answer = await first.text();
      const stream = carrier.streamOf(answer, first);
      expect(stream.path).toBe(carrier.mediaPath);
      expect(stream.callId).toMatch(/^call_/);
      expect(stream.secret.length).toBeGreaterThanOrEqual(16);
      const again = await carrier.send(body, await carrier.sign(body, 'account'));
      expect(again.status).toBe(200);
      expect(await again.text()).toBe(answer);
      expect(await callCount(t)).toBe(before + 1);
      const record = (await t.request('GET', `/v2/calls/${stream.callId}`)).body;
      expect(record).toMatchObject({
        call_type: 'inbound',
        call_from: '+14155550100',
        call_to: carrier.number,
        agent_id: carrier.agentId,
        call_status: 'registered',
        ...carrier.recordOf?.(body),
      });
    });
  });
}

/** The carrier's far side for a cold transfer: who answers, and what became of the transfers of a call it placed. */
export interface TransferCarrier {
  readonly service: () => TestService;
  /** The number the call goes out from. */
  readonly from: string;
  /** The agent placing the call: its transfer_call tool goes to `busyDesk`. */
  readonly agentId: string;
  readonly busyDesk: string;
  /** Makes `phone` answer, `talk` on its stream, then `afterTransfer` on the stream back after a failed transfer. */
  readonly answer: (
    phone: string,
    talk: (line: TwilioStreamCaller) => Promise<void>,
    afterTransfer: (line: TwilioStreamCaller) => Promise<void>,
  ) => void;
  /** The transfers of the call placed to `phone`, as the carrier saw them: where to, and its word for the outcome. */
  readonly transfersOf: (phone: string) => { to: string; outcome: string }[];
  /** The carrier's word for a busy destination. */
  readonly busy: string;
}

/**
 * An outbound call to `phone` asks for a person; the transfer meets a busy destination, the caller comes back to the
 * agent, who says it could not put them through. Resolves with the call's id and record for a carrier's own checks.
 */
export async function coldTransferToBusy(
  carrier: TransferCarrier,
  phone: string,
): Promise<{ callId: string; record: CallRecord }> {
  const t = carrier.service();
  let heardBack = false;
  carrier.answer(
    phone,
    async (line) => {
      await agentFinished(line, { after: 0, timeoutMs: 30_000 });
      await line.speak(fixtureUlaw('11-can-i-speak-to'));
      await line.waitForClose();
    },
    async (line) => {
      await agentFinished(line, { after: 0, timeoutMs: 30_000 });
      heardBack = true;
      await line.hangUp();
    },
  );
  const res = await t.request('POST', '/v2/calls', {
    body: { call_from: carrier.from, call_to: phone, agent_id: carrier.agentId },
  });
  expect(res.status, res.text).toBe(201);
  const callId = (res.body as { call_id: string }).call_id;
  const record = await callEnded(t, callId, 60_000);
  expect(carrier.transfersOf(phone)).toEqual([{ to: carrier.busyDesk, outcome: carrier.busy }]);
  expect(heardBack).toBe(true);
  expect(record).toMatchObject({
    call_status: 'ended',
    disconnection_reason: 'user_hangup',
    transfer_destination: null,
  });
  const agent = record.transcript!.filter((m) => m.role === 'agent').map((m) => m.content);
  expect(agent.slice(-2)).toEqual(['Let me transfer you.', DEMO_TRANSFER_FAILED]);
  return { callId, record };
}

/** A carrier's stand-in as a webhook test file starts and closes it. */
interface StandIn {
  readonly url: string;
  close(): Promise<void>;
}

/** The service and stand-in a carrier's webhook test file runs against, once its beforeAll has run. */
export interface CarrierDesk<S> {
  readonly t: () => TestService;
  readonly standIn: () => S;
  /** What a cold transfer from the desk needs but the carrier's own words (see TransferCarrier). */
  readonly transfer: Pick<TransferCarrier, 'service' | 'from' | 'agentId' | 'busyDesk'>;
}

/**
 * Registers the file's beforeAll and afterAll: starts the stand-in and the service configured with `env`, gives it
 * the carrier account holding `number`, and the desk agent `agentId`: the demo agent with a short greeting (each
 * call's time is mostly audio played in real time), answering `number` and `elsewhere`, whose transfer_call tool
 * goes to `busyDesk` (a busy phone). `created` is handed the account's creation answer.
 */
export function carrierDesk<S extends StandIn>(o: {
  carrier: string;
  start: () => Promise<S>;
  env: (standIn: S) => Record<string, string>;
  credentials: (standIn: S) => Record<string, string>;
  /** Makes `phone` busy on the stand-in. */
  busy: (standIn: S, phone: string) => void;
  number: string;
  elsewhere: string;
  agentId: string;
  busyDesk: string;
  created?: (accountText: string) => void;
}): CarrierDesk<S> {
  let t: TestService | undefined;
  let standIn: S | undefined;
  beforeAll(async () => {
    standIn = await o.start();
    t = await startTestService(o.env(standIn));
    const account = await t.request('POST', '/v2/carrier-accounts', {
      body: { carrier: o.carrier, name: 'main line', numbers: [o.number], credentials: o.credentials(standIn) },
    });
    expect(account.status, account.text).toBe(201);
    o.created?.(account.text);
    const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
    const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
    const agent = await t.request('POST', '/v2/agents', {
      body: {
        ...config,
        agent_id: o.agentId,
        // The demo's own greeting (~7 s), as these calls had before they shared this set-up: with a one-word greeting
        // the caller spoke at once, and at load 8-11 a SignalWire caller's words once never reached the transcript.
        inbound_numbers: [o.number, o.elsewhere],
        tools: [...demo.tools, { type: 'transfer_call', transfer_to: o.busyDesk }],
      },
    });
    expect(agent.status, agent.text).toBe(201);
    o.busy(standIn, o.busyDesk);
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    await standIn?.close();
  });
  const service = () => t!;
  return {
    t: service,
    standIn: () => standIn!,
    transfer: { service, from: o.number, agentId: o.agentId, busyDesk: o.busyDesk },
  };
}
