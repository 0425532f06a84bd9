// Where a change's webhook messages go: to the agent's own webhook_url, else to the
// organization's, and only the events the organization takes. One pure rule that both stores
// apply inside the transaction that made the change.
import type { WebhookEvent, WebhookMessage } from './events.ts';

export interface WebhookRoute {
  /** The organization's webhook_url; null: none. */
  webhook_url: string | null;
  /** The events the organization takes. */
  events: readonly WebhookEvent[];
}

export interface AddressedMessage extends WebhookMessage {
  url: string;
}

/** The messages to queue, each with its address; none when neither the agent nor the organization has a URL. */
export function addressMessages(
  messages: readonly WebhookMessage[],
  agentUrl: string | null,
  org: WebhookRoute,
): AddressedMessage[] {
  const url = agentUrl ?? org.webhook_url;
  if (!url) return [];
  return messages.filter((message) => org.events.includes(message.event)).map((message) => ({ ...message, url }));
}
