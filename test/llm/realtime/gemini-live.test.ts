// The Gemini Live protocol client: the server messages of the API reference's examples parse to what
// the call acts on, the setup is the documented one with activity detection off, and the client's
// messages, sent through the egress policy's opener, are ones a server speaking the documented protocol
// understands and answers with real results (the stand-in hears the audio and speaks back); its
// responses are framed as the call side asks for them (speech-socket.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { muLawDecode } from '../../../src/audio/g711.ts';
import { resample } from '../../../src/audio/resampler.ts';
import {
  functionResponseOf,
  geminiSetup,
  GeminiLiveSocket,
  parseGeminiMessage,
} from '../../../src/llm/realtime/gemini-live.ts';
import type { RealtimeEvent } from '../../../src/llm/realtime/speech-socket.ts';
import { isLlmError } from '../../../src/llm/errors.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { webSocketOpener } from '../../../src/net/websocket.ts';
import { wer } from '../../../bench/wer.ts';
import { fixtureUlaw } from '../../helpers/phone.ts';
import { GeminiLiveStandIn } from './gemini-stand-in.ts';

describe('server messages as the API reference shows them', () => {
  it('model audio, both transcriptions, turnComplete and usageMetadata parse', () => {
    const m = parseGeminiMessage(
      JSON.stringify({
        serverContent: {
          modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: 'AAEC' } }] },
          outputTranscription: { text: 'Hello' },
          inputTranscription: { text: 'hi there' },
          turnComplete: true,
        },
        usageMetadata: { promptTokenCount: 12, responseTokenCount: 5, totalTokenCount: 17 },
      }),
    );
    expect(m.serverContent?.modelTurn?.parts?.[0]?.inlineData?.data).toBe('AAEC');
    expect(m.serverContent?.outputTranscription?.text).toBe('Hello');
    expect(m.serverContent?.inputTranscription?.text).toBe('hi there');
    expect(m.serverContent?.turnComplete).toBe(true);
    expect(m.usageMetadata?.totalTokenCount).toBe(17);
  });

  it('a toolCall gives each function call its id, name and args; setupComplete and interrupted parse', () => {
    const m = parseGeminiMessage(
      JSON.stringify({ toolCall: { functionCalls: [{ id: 'fc_1', name: 'turn_on_the_lights', args: {} }] } }),
    );
    expect(m.toolCall?.functionCalls).toEqual([{ id: 'fc_1', name: 'turn_on_the_lights', args: {} }]);
    expect(parseGeminiMessage('{"setupComplete":{}}').setupComplete).toEqual({});
    expect(parseGeminiMessage('{"serverContent":{"interrupted":true}}').serverContent?.interrupted).toBe(true);
  });

  it('a message that is not JSON or breaks its shape is a coded model error', () => {
    expect(() => parseGeminiMessage('nope')).toThrow(expect.objectContaining({ code: 'LLM_BAD_CHUNK' }));
    expect(() => parseGeminiMessage('{"toolCall":{"functionCalls":[{"name":1}]}}')).toThrow(
      expect.objectContaining({ code: 'LLM_BAD_CHUNK' }),
    );
  });

  it('the setup asks for audio in the chosen voice, with the tools, both transcriptions and activity detection off', () => {
    expect(
      geminiSetup({
        model: 'gemini-live-2.5-flash-preview',
        instructions: 'Be brief.',
        voice: 'Kore',
        tools: [{ name: 'cancel_order', description: 'Cancels.', parameters: { type: 'object' } }],
      }),
    ).toEqual({
      setup: {
        model: 'models/gemini-live-2.5-flash-preview',
        generationConfig: {
          responseModalities: ['AUDIO'],
          speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } },
        },
        systemInstruction: { parts: [{ text: 'Be brief.' }] },
        tools: [
          { functionDeclarations: [{ name: 'cancel_order', description: 'Cancels.', parameters: { type: 'object' } }] },
        ],
        realtimeInputConfig: { automaticActivityDetection: { disabled: true } },
        inputAudioTranscription: {},
        outputAudioTranscription: {},
        sessionResumption: {},
      },
    });
  });

  it('the setup asks for session resumption, with the saved handle when it resumes a session', () => {
    const setup = (handle?: string) =>
      geminiSetup({ model: 'm', instructions: '', tools: [] }, handle).setup as Record<string, unknown>;
    expect(setup().sessionResumption).toEqual({});
    expect(setup('session_7').sessionResumption).toEqual({ handle: 'session_7' });
  });

  it('sessionResumptionUpdate, goAway and toolCallCancellation parse as the API reference shows them', () => {
    const m = parseGeminiMessage(
      JSON.stringify({
        sessionResumptionUpdate: { newHandle: 'h1', resumable: true },
        goAway: { timeLeft: '10s' },
        toolCallCancellation: { ids: ['fc_1', 'fc_2'] },
      }),
    );
    expect(m.sessionResumptionUpdate).toEqual({ newHandle: 'h1', resumable: true });
    expect(m.goAway?.timeLeft).toBe('10s');
    expect(m.toolCallCancellation?.ids).toEqual(['fc_1', 'fc_2']);
  });

  it('with the model’s own turn detection the setup leaves automatic activity detection on', () => {
    const setup = (turns: 'service' | 'model' | undefined) =>
      geminiSetup({ model: 'm', instructions: '', tools: [], turns }).setup as Record<string, unknown>;
    expect(setup('model').realtimeInputConfig).toEqual({ automaticActivityDetection: { disabled: false } });
    expect(setup('service').realtimeInputConfig).toEqual({ automaticActivityDetection: { disabled: true } });
    expect(setup(undefined).realtimeInputConfig).toEqual({ automaticActivityDetection: { disabled: true } });
  });

  it("a function's output goes back as the response object's output, parsed when it is JSON", () => {
    expect(functionResponseOf('{"cancelled":true}')).toEqual({ output: { cancelled: true } });
    expect(functionResponseOf('done')).toEqual({ output: 'done' });
  });
});

describe('the client against a server speaking the protocol', () => {
  let standIn: GeminiLiveStandIn;
  const open = webSocketOpener(EgressPolicy.fromEnv('127.0.0.0/8'));
  beforeAll(async () => {
    standIn = await GeminiLiveStandIn.start({
      script: (heard, output) =>
        output !== null
          ? { say: 'done' }
          : /cancel/.test(heard)
            ? { call: { name: 'cancel_order', arguments: '{"reason":"asked"}' } }
            : { say: `you said ${heard}` },
    });
  });
  afterAll(() => standIn.close());

  function collect(socket: GeminiLiveSocket): RealtimeEvent[] {
    const events: RealtimeEvent[] = [];
    socket.on((e) => events.push(e));
    return events;
  }

  async function until(events: RealtimeEvent[], done: (e: RealtimeEvent) => boolean, n = 1): Promise<void> {
    for (let i = 0; i < 750 && events.filter(done).length < n; i++) await new Promise((r) => setTimeout(r, 20));
    if (events.filter(done).length < n) throw new Error('the event never came');
  }

  async function waitFor(done: () => boolean): Promise<void> {
    for (let i = 0; i < 750 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
    if (!done()) throw new Error('it never happened');
  }

  function speech16k(name: string): Uint8Array {
    const pcm = resample(muLawDecode(fixtureUlaw(name)), 8000, 16000);
    const padded = new Int16Array(pcm.length + 4800);
    padded.set(pcm);
    return new Uint8Array(padded.buffer);
  }

  const connect = () =>
    GeminiLiveSocket.connect(open, {
      baseUrl: standIn.url,
      model: 'gemini-live-2.5-flash-preview',
      apiKey: 'gm-test',
      instructions: 'Echo.',
      tools: [{ name: 'cancel_order', description: 'Cancels.', parameters: { type: 'object' } }],
    });

  it('16 kHz audio in an activity is heard at activityEnd; the answer comes back as 24 kHz audio with its transcript', async () => {
    const socket = await connect();
    const events = collect(socket);
    socket.append(speech16k('01-my-name-is-john'));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done');
    socket.close();
    expect(standIn.upgrades.at(-1)?.apiKey).toBe('gm-test');
    expect(standIn.upgrades.at(-1)?.url).not.toContain('gm-test');
    expect(standIn.kinds().slice(-3)).toEqual(['setup', 'activityStart', 'activityEnd']);
    expect(standIn.outsideActivityBytes).toBe(0);
    const heard = events.find((e) => e.kind === 'caller_words');
    expect(heard && wer('my name is john smith', heard.transcript)).toBeLessThanOrEqual(0.2);
    expect(events[0]?.kind).toBe('response_started');
    const words = events.flatMap((e) => (e.kind === 'words' ? [e.delta] : [])).join('');
    expect(words.startsWith('you said')).toBe(true);
    const audio = Buffer.concat(events.flatMap((e) => (e.kind === 'audio' ? [e.audio] : [])));
    expect(audio.length / 2 / 24000).toBeGreaterThan(0.8);
    expect(events.find((e) => e.kind === 'response_done')).toMatchObject({
      status: 'completed',
      usage: { input_tokens: 20, output_tokens: 10, total_tokens: 30 },
    });
  }, 20_000);

  it('a toolCall ends the response with the call; the output goes back as a toolResponse and the model speaks again', async () => {
    const socket = await connect();
    const events = collect(socket);
    socket.append(speech16k('09-i-want-to-cancel'));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done');
    const call = events.find((e) => e.kind === 'function_call');
    expect(call).toMatchObject({ name: 'cancel_order', arguments: '{"reason":"asked"}' });
    if (call?.kind !== 'function_call') throw new Error('no call');
    // Caller audio while the model waits for the output is held back, not sent as a new activity.
    socket.append(new Uint8Array(3200));
    socket.functionOutput(call.callId, '{"cancelled":true}');
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done', 2);
    socket.close();
    expect(standIn.received.find((m) => m.kind === 'toolResponse')).toEqual({
      kind: 'toolResponse',
      functionResponses: [{ id: call.callId, name: 'cancel_order', response: { output: { cancelled: true } } }],
    });
    expect(events.flatMap((e) => (e.kind === 'words' ? [e.delta] : [])).join('')).toBe('done');
  }, 20_000);

  it('a barge-in is an activityStart, and what was heard of the cut reply is told as a note', async () => {
    const socket = await connect();
    socket.addText('assistant', 'Hello.');
    socket.createResponse();
    socket.cancelResponse();
    socket.heardOnly('you said');
    await new Promise((r) => setTimeout(r, 200));
    socket.close();
    const kinds = standIn.kinds();
    expect(kinds.slice(kinds.lastIndexOf('setup'))).toEqual([
      'setup',
      'clientContent',
      'clientContent',
      'activityStart',
      'clientContent',
    ]);
    expect(standIn.told.slice(-2)).toEqual([
      { role: 'model', text: 'Hello.' },
      { role: 'user', text: '[system note] The caller cut your last reply short; they heard only: "you said"' },
    ]);
  }, 20_000);

  it('with the model’s own turn detection, audio alone is answered as a response the client did not ask for, speech over the answer is the caller starting, the model reports it only until its turn is complete, and notes go as text turns', async () => {
    const socket = await GeminiLiveSocket.connect(open, {
      baseUrl: standIn.url,
      model: 'gemini-live-2.5-flash-preview',
      instructions: 'Echo.',
      tools: [],
      turns: 'model',
    });
    const from = standIn.received.length;
    const events = collect(socket);
    // While it generates, the model would say the caller started ("interrupted"); once its turn is complete, not.
    const reportsWhenStarted: boolean[] = [];
    socket.on((e) => {
      if (e.kind === 'response_started') reportsWhenStarted.push(socket.reportsCallerSpeech());
    });
    socket.append(speech16k('01-my-name-is-john'));
    socket.append(new Uint8Array(16000 * 2 * 0.6));
    await until(events, (e) => e.kind === 'response_started');
    expect(reportsWhenStarted).toEqual([true]);
    // The model speaks: a note now would cut it off, so it waits for turnComplete.
    socket.addText('system', 'The caller is on a mobile phone.');
    await until(events, (e) => e.kind === 'response_done');
    expect(socket.reportsCallerSpeech()).toBe(false);
    // Talking while the answer would still be playing interrupts it.
    socket.append(speech16k('08-goodbye'));
    await until(events, (e) => e.kind === 'speech_started');
    socket.close();
    const kinds = events.map((e) => e.kind).filter((k) => k !== 'audio' && k !== 'words' && k !== 'caller_words');
    expect(kinds.slice(0, 3)).toEqual(['response_started', 'response_done', 'speech_started']);
    expect(events.find((e) => e.kind === 'response_done')).toMatchObject({ status: 'completed' });
    expect(events.flatMap((e) => (e.kind === 'words' ? [e.delta] : [])).join('')).toMatch(/^you said/);
    const sent = standIn.received.slice(from).map((m) => m.kind);
    expect(sent).not.toContain('activityStart');
    expect(sent).not.toContain('activityEnd');
    expect(sent.filter((k) => k !== 'audio')).toEqual(['clientContent']);
    expect(standIn.told.at(-1)).toEqual({ role: 'user', text: '[system note] The caller is on a mobile phone.' });
  }, 30_000);

  /** The setups the stand-in received since `from`, as their sessionResumption. */
  const resumptions = (from: number) =>
    standIn.received
      .slice(from)
      .filter((m) => m.kind === 'setup')
      .map((m) => (m.setup as { sessionResumption?: unknown }).sessionResumption);

  it('on goAway the call moves to a new socket that resumes the session with the saved handle, and the next answer comes on it', async () => {
    const from = standIn.received.length;
    const socket = await connect();
    const events = collect(socket);
    const closes: Error[] = [];
    socket.onClose((e) => closes.push(e));
    socket.append(speech16k('01-my-name-is-john'));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done');
    const handle = standIn.handles.at(-1);
    const outside = standIn.outsideActivityBytes;
    standIn.resumeDelayMs = 300;
    standIn.goAway(1500);
    await waitFor(() => resumptions(from).length === 2);
    const resumedAt = standIn.received.length;
    // What the call sends while the new socket is set up (its setupComplete not there yet) is queued for it.
    socket.append(speech16k('08-goodbye'));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done', 2);
    standIn.resumeDelayMs = 0;
    expect(resumptions(from)).toEqual([{}, { handle }]);
    expect(standIn.openSockets()).toBe(1);
    expect(
      standIn.received
        .slice(resumedAt)
        .map((m) => m.kind)
        .filter((k) => k !== 'audio'),
    ).toEqual(['activityStart', 'activityEnd']);
    expect(standIn.outsideActivityBytes).toBe(outside);
    const second = events.slice(events.findIndex((e) => e.kind === 'response_done') + 1);
    expect(second.filter((e) => e.kind === 'words').length).toBeGreaterThan(0);
    expect(second.find((e) => e.kind === 'response_done')).toMatchObject({ status: 'completed' });
    // The old socket's time running out is not the call's failure.
    await new Promise((r) => setTimeout(r, 1200));
    expect(closes).toEqual([]);
    expect(socket.failure).toBeNull();
    socket.close();
  }, 30_000);

  it('a socket the server closes unexpectedly is resumed once with the saved handle; a resume refused is the failure', async () => {
    const from = standIn.received.length;
    const socket = await connect();
    const events = collect(socket);
    const closes: Error[] = [];
    socket.onClose((e) => closes.push(e));
    const handle = standIn.handles.at(-1);
    standIn.drop();
    await waitFor(() => resumptions(from).length === 2);
    socket.append(speech16k('01-my-name-is-john'));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done');
    expect(resumptions(from)).toEqual([{}, { handle }]);
    expect(closes).toEqual([]);
    expect(standIn.openSockets()).toBe(1);
    // A handle the server no longer knows: the one resume is refused and the close is reported.
    standIn.forgetHandles();
    standIn.drop();
    await waitFor(() => closes.length > 0);
    expect(closes).toHaveLength(1);
    expect(isLlmError(socket.failure, 'LLM_NETWORK')).toBe(true);
    expect(resumptions(from)).toHaveLength(3);
    socket.close();
  }, 30_000);

  it('a function call the server cancels gets no toolResponse, and the call side is told', async () => {
    const from = standIn.received.length;
    const socket = await connect();
    const events = collect(socket);
    socket.append(speech16k('09-i-want-to-cancel'));
    socket.commit();
    socket.createResponse();
    await until(events, (e) => e.kind === 'function_call');
    const call = events.find((e) => e.kind === 'function_call');
    if (call?.kind !== 'function_call') throw new Error('no call');
    standIn.cancelToolCall();
    await until(events, (e) => e.kind === 'function_calls_cancelled');
    expect(events.find((e) => e.kind === 'function_calls_cancelled')).toEqual({
      kind: 'function_calls_cancelled',
      callIds: [call.callId],
    });
    // An output that comes for it anyway is not sent.
    socket.functionOutput(call.callId, '{"cancelled":true}');
    socket.createResponse();
    await until(events, (e) => e.kind === 'response_done', 2);
    socket.close();
    expect(standIn.received.slice(from).filter((m) => m.kind === 'toolResponse')).toEqual([]);
  }, 30_000);

  it('a socket the egress policy refuses never opens: the failure is a coded model error', async () => {
    const closed = webSocketOpener(EgressPolicy.fromEnv(''));
    const failure = await GeminiLiveSocket.connect(closed, {
      baseUrl: standIn.url,
      model: 'm',
      instructions: '',
      tools: [],
    }).catch((error: unknown) => error);
    expect(isLlmError(failure, 'LLM_NETWORK')).toBe(true);
  });
});
