// The NCCOs (Call Control Objects, JSON arrays of actions) the service gives Vonage: on an inbound
// call's answer URL (voice-webhook.ts), inline with each call it places and each cold transfer
// (dialer.ts), to bring a caller back after a transfer that failed (event-webhooks.ts), and to join
// a warm transfer's two legs (dialer.ts). The actions relied on, as Vonage documents them:
//
//   {"action":"talk","text":"…"}                                   speaks, then the NCCO goes on (or ends the call)
//   {"action":"connect","eventUrl":["https://…"],"endpoint":[{"type":"websocket","uri":"wss://…",
//        "content-type":"audio/l16;rate=16000","headers":{…}}]}    the call's audio both ways over a WebSocket;
//        the headers come back, flattened, in the socket's first message (websocket:connected)
//   {"action":"connect","from":"447700900001","timeout":30,"eventType":"synchronous","eventUrl":["https://…"],
//        "endpoint":[{"type":"phone","number":"447700900002"}]}     dials a phone; with eventType synchronous the
//        NCCO waits on the eventUrl, whose answer to a leg that ended unanswered (busy, timeout, rejected, …)
//        may be a new NCCO the call goes on with
//   {"action":"conversation","name":"…","startOnEnter":true,"endOnExit":true}
//                                                                   joins the named conversation (an audio room
//        the legs that join it share); endOnExit: the conversation ends when this leg leaves it
//
// The stream is wideband, 16-bit linear PCM at 16 kHz (little-endian, Vonage's L16); call_id and
// the per-call secret travel as its headers. Numbers go without their "+".
import { vonageNumberOf } from './accounts.ts';

export const VONAGE_MEDIA_PATH = '/media/vonage';
/** Where the Voice API's call events come (event-webhooks.ts). */
export const EVENT_CALLBACK_PATH = '/telephony/vonage/event';
/** What the service asks Vonage to stream: wideband L16. */
export const VONAGE_CONTENT_TYPE = 'audio/l16;rate=16000';

export type NccoAction = Record<string, unknown>;

/** The media address Vonage opens: PUBLIC_URL with https→wss, http→ws. */
export function vonageMediaUrl(publicUrl: string): string {
  return `${publicUrl.replace(/^http/, 'ws')}${VONAGE_MEDIA_PATH}`;
}

/**
 * The call connected to the service's media WebSocket. The websocket leg's own events name the call, so they are
 * checked with its account's secret, and are not taken for the phone leg's (event-webhooks.ts).
 */
export function connectWebsocketNcco(publicUrl: string, callId: string, secret: string): NccoAction[] {
  return [
    {
      action: 'connect',
      eventUrl: [`${publicUrl}${EVENT_CALLBACK_PATH}?call_id=${encodeURIComponent(callId)}`],
      endpoint: [
        {
          type: 'websocket',
          uri: vonageMediaUrl(publicUrl),
          'content-type': VONAGE_CONTENT_TYPE,
          headers: { call_id: callId, secret },
        },
      ],
    },
  ];
}

export function sayAndHangUpNcco(text: string): NccoAction[] {
  return [{ action: 'talk', text }];
}

/** A cold transfer: the caller is connected to `to`; how the new leg goes is told to `eventUrl`. */
export function transferNcco(o: { to: string; from: string | null; timeoutS: number; eventUrl: string }): NccoAction[] {
  return [
    {
      action: 'connect',
      ...(o.from ? { from: vonageNumberOf(o.from) } : {}),
      timeout: o.timeoutS,
      eventType: 'synchronous',
      eventUrl: [o.eventUrl],
      endpoint: [{ type: 'phone', number: vonageNumberOf(o.to) }],
    },
  ];
}

/** A warm transfer's bridge: the leg joins conversation `name`, which ends when either of its two legs leaves. */
export function conversationNcco(name: string): NccoAction[] {
  return [{ action: 'conversation', name, startOnEnter: true, endOnExit: true }];
}

/** The answer markup for carriers/inbound-call.ts: NCCOs as JSON text. */
export const NCCO_MARKUP = {
  sayAndHangUp: (text: string) => JSON.stringify(sayAndHangUpNcco(text)),
  connectStream: (publicUrl: string, callId: string, secret: string) =>
    JSON.stringify(connectWebsocketNcco(publicUrl, callId, secret)),
};
