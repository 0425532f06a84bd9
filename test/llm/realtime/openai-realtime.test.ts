// The OpenAI Realtime protocol client: the server events of the API reference's examples parse to
// what the call acts on (GA and beta names alike), and the client's events, sent through the egress
// policy's opener, are ones a server speaking the documented protocol understands and answers with
// real results (the stand-in hears the audio and speaks back).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { muLawDecode, muLawEncode } from '../../../src/audio/g711.ts';
import {
  asideRequest,
  OpenAiRealtimeSocket,
  parseRealtimeEvent,
  sessionUpdate,
  turnDetectionOf,
  type RealtimeEvent,
} from '../../../src/llm/realtime/openai-realtime.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { webSocketOpener } from '../../../src/net/websocket.ts';
import { isLlmError } from '../../../src/llm/errors.ts';
import { wer } from '../../../bench/wer.ts';
import { fixtureUlaw } from '../../helpers/phone.ts';
import { OpenAiRealtimeStandIn } from './openai-stand-in.ts';

function concatBytes(parts: Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

describe('server events as the API reference shows them', () => {
  it('audio and transcript deltas parse under their GA and beta names alike', () => {
    const audio = { response_id: 'resp_1', item_id: 'item_1', output_index: 0, content_index: 0, delta: 'AAEC' };
    for (const type of ['response.output_audio.delta', 'response.audio.delta'])
      expect(parseRealtimeEvent(JSON.stringify({ event_id: 'e', type, ...audio }))).toEqual({
        kind: 'audio',
        itemId: 'item_1',
        audio: Buffer.from([0, 1, 2]),
      });
    for (const type of ['response.output_audio_transcript.delta', 'response.audio_transcript.delta'])
      expect(parseRealtimeEvent(JSON.stringify({ type, ...audio, delta: 'Hello' }))).toEqual({
        kind: 'words',
        itemId: 'item_1',
        delta: 'Hello',
      });
  });

  it('a finished function call, response.done with its usage, a truncation and an error parse to what the call needs', () => {
    expect(
      parseRealtimeEvent(
        JSON.stringify({
          type: 'response.function_call_arguments.done',
          event_id: 'event_5',
          response_id: 'resp_002',
          item_id: 'fc_001',
          output_index: 0,
          call_id: 'call_001',
          name: 'get_weather',
          arguments: '{"location": "San Francisco"}',
        }),
      ),
    ).toEqual({
      kind: 'function_call',
      itemId: 'fc_001',
      callId: 'call_001',
      name: 'get_weather',
      arguments: '{"location": "San Francisco"}',
    });
    expect(
      parseRealtimeEvent(
        JSON.stringify({
          type: 'response.done',
          response: {
            id: 'resp_001',
            status: 'completed',
            output: [],
            usage: { total_tokens: 253, input_tokens: 132, output_tokens: 121 },
          },
        }),
      ),
    ).toEqual({
      kind: 'response_done',
      responseId: 'resp_001',
      status: 'completed',
      usage: { input_tokens: 132, output_tokens: 121, total_tokens: 253 },
    });
    expect(
      parseRealtimeEvent(
        JSON.stringify({
          type: 'conversation.item.truncated',
          item_id: 'msg_004',
          content_index: 0,
          audio_end_ms: 1500,
        }),
      ),
    ).toEqual({ kind: 'truncated', itemId: 'msg_004', audioEndMs: 1500 });
    expect(
      parseRealtimeEvent(
        JSON.stringify({
          type: 'error',
          error: { type: 'invalid_request_error', code: 'invalid_event', message: 'The event broke.', param: null },
        }),
      ),
    ).toEqual({ kind: 'error', code: 'invalid_event', message: 'The event broke.' });
  });

  it('an out-of-band text answer is asked with conversation "none" and text only; its response.created is none of the call\'s responses, and its response.done gives its text', () => {
    expect(asideRequest('Sum it up.')).toEqual({
      type: 'response.create',
      response: {
        conversation: 'none',
        output_modalities: ['text'],
        instructions: 'Sum it up.',
        metadata: { aside: 'true' },
      },
    });
    const response = { id: 'resp_9', object: 'realtime.response', conversation_id: null, metadata: { aside: 'true' } };
    expect(
      parseRealtimeEvent(
        JSON.stringify({ type: 'response.created', response: { ...response, status: 'in_progress' } }),
      ),
    ).toEqual({ kind: 'other', type: 'response.created' });
    const output = [
      { id: 'item_1', type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A caller.' }] },
    ];
    expect(
      parseRealtimeEvent(
        JSON.stringify({ type: 'response.done', response: { ...response, status: 'completed', output } }),
      ),
    ).toEqual({ kind: 'aside_done', status: 'completed', text: 'A caller.' });
    // The call's own responses are read as before, whatever their output and metadata hold.
    const own = {
      id: 'resp_10',
      status: 'completed',
      metadata: null,
      output: [{ content: [{ type: 'output_audio', transcript: 'Hi', text: null }] }],
    };
    expect(parseRealtimeEvent(JSON.stringify({ type: 'response.created', response: own }))).toEqual({
      kind: 'response_started',
      responseId: 'resp_10',
    });
    expect(parseRealtimeEvent(JSON.stringify({ type: 'response.done', response: own }))).toEqual({
      kind: 'response_done',
      responseId: 'resp_10',
      status: 'completed',
      usage: null,
    });
  });

  it('an event that is not JSON, or breaks its documented shape, is a coded error', () => {
    expect(() => parseRealtimeEvent('{nope')).toThrow(expect.objectContaining({ code: 'LLM_BAD_CHUNK' }));
    expect(() => parseRealtimeEvent(JSON.stringify({ type: 'response.output_audio.delta', delta: 1 }))).toThrow(
      expect.objectContaining({ code: 'LLM_BAD_CHUNK' }),
    );
  });

  it('session.update turns the model’s own turn detection off with null and gives one format both ways', () => {
    const update = sessionUpdate({
      instructions: 'Be brief.',
      voice: 'marin',
      format: { type: 'audio/pcmu' },
      tools: [],
      turnDetection: null,
    });
    expect(update).toEqual({
      type: 'session.update',
      session: {
        type: 'realtime',
        instructions: 'Be brief.',
        output_modalities: ['audio'],
        audio: {
          input: { format: { type: 'audio/pcmu' }, turn_detection: null },
          output: { format: { type: 'audio/pcmu' }, voice: 'marin' },
        },
        tools: [],
        tool_choice: 'auto',
      },
    });
  });
});

describe('the model’s own turn detection (llm.turn_detection "model")', () => {
  it('"service" clears turn_detection with null; "model" asks for server_vad that answers and cancels by itself', () => {
    expect(turnDetectionOf('service')).toBeNull();
    const update = sessionUpdate({
      instructions: '',
      format: { type: 'audio/pcmu' },
      tools: [],
      turnDetection: turnDetectionOf('model'),
    });
    expect(update).toMatchObject({
      session: {
        audio: {
          input: {
            turn_detection: { type: 'server_vad', create_response: true, interrupt_response: true },
          },
        },
      },
    });
  });

  it('speech_started, speech_stopped and committed parse with their audio times', () => {
    expect(
      parseRealtimeEvent(
        JSON.stringify({
          event_id: 'event_1516',
          type: 'input_audio_buffer.speech_started',
          audio_start_ms: 1000,
          item_id: 'msg_003',
        }),
      ),
    ).toEqual({ kind: 'speech_started', audioStartMs: 1000 });
    expect(
      parseRealtimeEvent(
        JSON.stringify({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: 2000, item_id: 'msg_003' }),
      ),
    ).toEqual({ kind: 'speech_stopped', audioEndMs: 2000 });
    expect(
      parseRealtimeEvent(
        JSON.stringify({ type: 'input_audio_buffer.committed', previous_item_id: 'msg_001', item_id: 'msg_002' }),
      ),
    ).toEqual({ kind: 'committed' });
    expect(() =>
      parseRealtimeEvent(JSON.stringify({ type: 'input_audio_buffer.speech_started', audio_start_ms: 'soon' })),
    ).toThrow(expect.objectContaining({ code: 'LLM_BAD_CHUNK' }));
  });
});

describe('the client against a server speaking the protocol', () => {
  let standIn: OpenAiRealtimeStandIn;
  const open = webSocketOpener(EgressPolicy.fromEnv('127.0.0.0/8'));
  beforeAll(async () => {
    standIn = await OpenAiRealtimeStandIn.start();
  });
  afterAll(() => standIn.close());

  function collect(socket: OpenAiRealtimeSocket): RealtimeEvent[] {
    const events: RealtimeEvent[] = [];
    socket.on((e) => events.push(e));
    return events;
  }

  async function until(events: RealtimeEvent[], done: (e: RealtimeEvent) => boolean): Promise<void> {
    for (let i = 0; i < 750 && !events.some(done); i++) await new Promise((r) => setTimeout(r, 20));
    if (!events.some(done)) throw new Error('the event never came');
  }

  it('μ-law audio appended and committed is heard; the answer comes back as μ-law audio with its transcript', async () => {
    const socket = await OpenAiRealtimeSocket.connect(open, {
      baseUrl: standIn.url,
      model: 'gpt-realtime',
      apiKey: 'sk-test',
    });
    const events = collect(socket);
    socket.configure({ instructions: 'Echo.', format: { type: 'audio/pcmu' }, tools: [], turnDetection: null });
    socket.append(concatBytes([fixtureUlaw('01-my-name-is-john'), muLawEncode(new Int16Array(2400))]));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done');
    socket.close();
    expect(standIn.upgrades.at(-1)).toEqual({
      url: '/v1/realtime?model=gpt-realtime',
      authorization: 'Bearer sk-test',
    });
    const heard = events.find((e) => e.kind === 'caller_words');
    expect(heard && wer('my name is john smith', heard.transcript)).toBeLessThanOrEqual(0.2);
    const words = events.flatMap((e) => (e.kind === 'words' ? [e.delta] : [])).join('');
    expect(words.startsWith('you said')).toBe(true);
    const audio = Buffer.concat(events.flatMap((e) => (e.kind === 'audio' ? [e.audio] : [])));
    const pcm = muLawDecode(audio);
    expect(pcm.length / 8000).toBeGreaterThan(0.8);
    expect(Math.max(...pcm.map((s) => Math.abs(s)))).toBeGreaterThan(2000);
    expect(events.some((e) => e.kind === 'error')).toBe(false);
  }, 20_000);

  it('with server_vad, audio only appended is heard: the server reports the speech with its times, commits and answers by itself', async () => {
    const socket = await OpenAiRealtimeSocket.connect(open, { baseUrl: standIn.url, model: 'gpt-realtime' });
    const events = collect(socket);
    socket.configure({
      instructions: 'Echo.',
      format: { type: 'audio/pcmu' },
      tools: [],
      turnDetection: turnDetectionOf('model'),
    });
    const speech = fixtureUlaw('01-my-name-is-john');
    // Half a second of silence first, then the words, then the silence that ends the turn.
    socket.append(concatBytes([muLawEncode(new Int16Array(4000)), speech, muLawEncode(new Int16Array(8000))]));
    await until(events, (e) => e.kind === 'response_done');
    socket.close();
    const kinds = events.map((e) => e.kind).filter((k) => k !== 'audio' && k !== 'words' && k !== 'other');
    expect(kinds).toEqual([
      'session',
      'session',
      'speech_started',
      'speech_stopped',
      'committed',
      'caller_words',
      'response_started',
      'response_done',
    ]);
    const started = events.find((e) => e.kind === 'speech_started');
    const stopped = events.find((e) => e.kind === 'speech_stopped');
    const speechMs = speech.length / 8;
    // The times are ms of all the audio appended: the words start after the half second of silence.
    expect(started).toMatchObject({ audioStartMs: expect.any(Number) });
    expect(stopped).toMatchObject({ audioEndMs: expect.any(Number) });
    if (started?.kind !== 'speech_started' || stopped?.kind !== 'speech_stopped') throw new Error('no speech times');
    expect(started.audioStartMs).toBeGreaterThanOrEqual(0);
    expect(started.audioStartMs).toBeLessThan(500 + speechMs / 2);
    expect(stopped.audioEndMs).toBeGreaterThan(500 + speechMs / 2);
    expect(stopped.audioEndMs).toBeLessThanOrEqual(500 + speechMs + 20);
    expect(standIn.types().slice(-1)).toEqual(['session.update']);
  }, 20_000);

  it('a truncation within the audio is confirmed; one past the audio is refused with an error event', async () => {
    const socket = await OpenAiRealtimeSocket.connect(open, { baseUrl: standIn.url, model: 'gpt-realtime' });
    const events = collect(socket);
    socket.configure({ instructions: '', format: { type: 'audio/pcmu' }, tools: [], turnDetection: null });
    socket.append(muLawEncode(new Int16Array(8000)));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done');
    const item = events.find((e) => e.kind === 'audio');
    if (item?.kind !== 'audio') throw new Error('no audio');
    socket.truncate(item.itemId, 300);
    await until(events, (e) => e.kind === 'truncated');
    socket.truncate(item.itemId, 60_000);
    await until(events, (e) => e.kind === 'error');
    socket.close();
    expect(events.find((e) => e.kind === 'truncated')).toEqual({
      kind: 'truncated',
      itemId: item.itemId,
      audioEndMs: 300,
    });
    expect(events.find((e) => e.kind === 'error')).toMatchObject({ code: 'invalid_value' });
  }, 20_000);

  it('a socket the egress policy refuses never opens: the failure is a coded model error', async () => {
    const closed = webSocketOpener(EgressPolicy.fromEnv(''));
    const failure = await OpenAiRealtimeSocket.connect(closed, { baseUrl: standIn.url, model: 'm' }).catch(
      (error: unknown) => error,
    );
    expect(isLlmError(failure, 'LLM_NETWORK')).toBe(true);
  });
});
