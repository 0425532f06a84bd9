// Keypad digits both ways, end to end with the demo agent and simulated phones over real sockets:
// a caller who confirms a booking by pressing 1, and the agent calling a phone menu, hearing it,
// and pressing the key for appointments (1) as tones the menu hears in the audio.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../src/records/record.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
const KEYPAD_CALLER = '+15550002';
const PHONE_MENU = '+15550003';

beforeAll(async () => {
  // The menu waits 15 s for its key: the recogniser is loaded before the first call (the call once found it loading
  // 15-17 s on two loaded cores, and the menu hung up before its reading).
  t = await startTestService(
    {
      SIM_NUMBERS: `${KEYPAD_CALLER}=answer:book-by-keypad,${PHONE_MENU}=answer:phone-menu`,
      SIM_ANSWER_DELAY_MS: '200',
    },
    { recogniserLoaded: true },
  );
}, 60_000);
afterAll(async () => t?.stop());

async function call(to: string): Promise<CallRecord> {
  const placed = await t.request('POST', '/v2/calls', {
    body: { call_from: '+14155550100', call_to: to, agent_id: 'demo' },
  });
  expect(placed.status).toBe(201);
  return callEnded(t, (placed.body as { call_id: string }).call_id);
}

describe('keypad digits', () => {
  it('a caller pressing 1 at the read-back books, the transcript marking the keyed turn; the agent calling a menu presses 1 for appointments and is put through', async () => {
    const [keyed, menu] = await Promise.all([call(KEYPAD_CALLER), call(PHONE_MENU)]);
    // What the agent heard of the menu, should the menu's script have failed.
    const heard = menu.transcript?.map((m) => `${m.role}: ${m.content}`);
    expect(
      t.logs.filter((l) => l.includes('script failed')),
      JSON.stringify(heard),
    ).toEqual([]);

    expect(keyed).toMatchObject({ call_status: 'ended', disconnection_reason: 'agent_hangup' });
    const turns = keyed.transcript!;
    const pressed = turns.findIndex((m) => m.input === 'keypad');
    expect(turns[pressed]).toMatchObject({ role: 'user', content: '1' });
    expect(turns[pressed - 1]!.content).toMatch(/Shall I book it\?$/);
    expect(turns.filter((m) => m.input === 'keypad')).toHaveLength(1);
    expect(
      keyed.transcript_with_tool_calls!.find((m) => m.role === 'tool_call_invocation' && m.name === 'book_appointment'),
    ).toMatchObject({
      arguments: JSON.stringify({ name: 'John Smith', time: 'next Monday morning' }),
    });

    // Put through to appointments, which says goodbye: the agent says it too, and one of them hangs up.
    expect(menu.call_status).toBe('ended');
    expect(['agent_hangup', 'user_hangup']).toContain(menu.disconnection_reason);
    const items = menu.transcript_with_tool_calls!;
    const press = items.findIndex((m) => m.role === 'tool_call_invocation' && m.name === 'press_digits');
    expect(items[press]).toMatchObject({ arguments: '{"digits":"1"}' });
    expect(items.slice(press).find((m) => m.role === 'tool_call_result')).toMatchObject({
      successful: true,
      content: '{"pressed":"1"}',
    });
    expect(
      menu
        .transcript!.filter((m) => m.role === 'user')
        .map((m) => m.content)
        .join(' '),
    ).toMatch(/reached appointments/i);
  }, 90_000);
});
