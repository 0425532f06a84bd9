import { describe, expect, it } from 'vitest';
import { campaignEndedMessage, type WebhookMessage } from '../../src/webhooks/events.ts';
import { addressMessages } from '../../src/webhooks/routing.ts';

const started: WebhookMessage = { event: 'call_started', body: '{"event":"call_started"}' };
const ended: WebhookMessage = { event: 'call_ended', body: '{"event":"call_ended"}' };
const everyEvent = ['call_started', 'call_ended', 'call_analyzed', 'campaign_ended'] as const;

describe('webhook routing', () => {
  it("sends to the agent's own webhook_url when it has one, over the organization's", () => {
    const out = addressMessages([started], 'https://agent.example/hook', {
      webhook_url: 'https://org.example/hook',
      events: everyEvent,
    });
    expect(out).toEqual([{ ...started, url: 'https://agent.example/hook' }]);
  });

  it("falls back to the organization's webhook_url", () => {
    expect(
      addressMessages([started, ended], null, { webhook_url: 'https://org.example/hook', events: everyEvent }).map(
        (m) => m.url,
      ),
    ).toEqual(['https://org.example/hook', 'https://org.example/hook']);
  });

  it('queues nothing when neither the agent nor the organization has a URL', () => {
    expect(addressMessages([started], null, { webhook_url: null, events: everyEvent })).toEqual([]);
  });

  it("sends only the events the organization takes, in their order, even to the agent's URL", () => {
    const out = addressMessages([started, ended], 'https://agent.example/hook', {
      webhook_url: null,
      events: ['call_ended'],
    });
    expect(out.map((m) => m.event)).toEqual(['call_ended']);
  });

  it('campaign_ended carries the campaign as its API shows it', () => {
    expect(JSON.parse(campaignEndedMessage({ campaign_id: 'c1' }).body)).toEqual({
      event: 'campaign_ended',
      campaign: { campaign_id: 'c1' },
    });
  });
});
