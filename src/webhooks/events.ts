// What a change of a call record tells the organization's webhook (docs/contract.md, "Events"):
// call_started when it connects, call_ended when it is over (without call_analysis, even when it
// never connected), call_analyzed when its analysis arrives; campaign_ended ({"event", "campaign"})
// when a campaign or batch reaches success, fail or canceled.
import type { CallRecord } from '../records/record.ts';

export const WEBHOOK_EVENTS = ['call_started', 'call_ended', 'call_analyzed', 'campaign_ended'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookMessage {
  event: WebhookEvent;
  /** The JSON body as it is signed and sent: {"event", "call"} or {"event", "campaign"}. */
  body: string;
}

/** campaign_ended for a campaign or batch as its API shows it. */
export function campaignEndedMessage(campaign: unknown): WebhookMessage {
  return { event: 'campaign_ended', body: JSON.stringify({ event: 'campaign_ended', campaign }) };
}

const OVER = new Set<CallRecord['call_status']>(['ended', 'not_connected', 'error']);

/** The events one change of a record makes, in the order they happened. */
export function callEventsOf(before: CallRecord, after: CallRecord): WebhookMessage[] {
  const out: WebhookMessage[] = [];
  const message = (event: WebhookEvent, call: CallRecord) => out.push({ event, body: JSON.stringify({ event, call }) });
  if (before.call_status !== 'ongoing' && after.call_status === 'ongoing') message('call_started', after);
  if (!OVER.has(before.call_status) && OVER.has(after.call_status))
    message('call_ended', { ...after, call_analysis: null });
  if (before.call_analysis === null && after.call_analysis !== null) message('call_analyzed', after);
  return out;
}
