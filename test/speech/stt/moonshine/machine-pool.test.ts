import { describe, expect, it } from 'vitest';
import { isSttError, SttError } from '../../../../src/speech/stt/errors.ts';
import {
  RecogniserLink,
  RecogniserRequest,
  type RecogniserAnswer,
} from '../../../../src/speech/stt/moonshine/machine-pool.ts';

/** A link whose requests are kept, and a way to answer them as the primary would. */
function linked() {
  const sent: RecogniserRequest[] = [];
  const link = new RecogniserLink((request) => sent.push(RecogniserRequest.parse(request)));
  const answer = (message: RecogniserAnswer) => link.onMessage(message);
  return { link, sent, answer };
}

describe('RecogniserLink (a service process talking to the machine recogniser)', () => {
  it('opens each model once: every stream waits for the same answer, and later ones need none', async () => {
    const { link, sent, answer } = linked();
    const first = link.ready('tiny');
    const second = link.ready('tiny');
    expect(sent).toEqual([{ type: 'voicecall:stt-open', model: 'tiny' }]);
    answer({ type: 'voicecall:stt-opened', model: 'tiny' });
    await Promise.all([first, second]);
    await link.ready('tiny');
    expect(sent).toHaveLength(1);
  });

  it('rejects an open with the recogniser’s own code when the model cannot load, and asks again next time', async () => {
    const { link, sent, answer } = linked();
    const opening = link.ready('base');
    answer({
      type: 'voicecall:stt-open-failed',
      model: 'base',
      code: 'STT_MODEL_INVALID',
      message: 'moonshine model files missing',
    });
    await expect(opening).rejects.toSatisfy((err) => isSttError(err, 'STT_MODEL_INVALID'));
    void link.ready('base').catch(() => undefined);
    expect(sent.filter((r) => r.type === 'voicecall:stt-open')).toHaveLength(2);
  });

  it('sends the audio with the hints and gives each reading its own text, in whatever order they come', async () => {
    const { link, sent, answer } = linked();
    const a = link.read('tiny', Int16Array.of(1, 2, 3), 8000, ['Almaxaquottl']);
    const b = link.read('base', Int16Array.of(4), 16000, []);
    expect(sent).toEqual([
      {
        type: 'voicecall:stt-read',
        id: 1,
        model: 'tiny',
        samples: Int16Array.of(1, 2, 3),
        sampleRate: 8000,
        phrases: ['Almaxaquottl'],
      },
      { type: 'voicecall:stt-read', id: 2, model: 'base', samples: Int16Array.of(4), sampleRate: 16000, phrases: [] },
    ]);
    answer({ type: 'voicecall:stt-text', id: 2, text: 'second' });
    answer({ type: 'voicecall:stt-text', id: 1, text: 'first' });
    expect(await Promise.all([a, b])).toEqual(['first', 'second']);
  });

  it('a reading whose signal fires is cancelled at once and its late text is dropped', async () => {
    const { link, sent, answer } = linked();
    const controller = new AbortController();
    const reading = link.read('tiny', Int16Array.of(1), 8000, [], controller.signal);
    controller.abort();
    await expect(reading).rejects.toSatisfy((err) => isSttError(err, 'STT_ABORTED'));
    expect(sent.at(-1)).toEqual({ type: 'voicecall:stt-cancel', id: 1 });
    answer({ type: 'voicecall:stt-text', id: 1, text: 'too late' });
  });

  it('the recogniser dying fails every reading under way with STT_ENGINE_CRASHED, and the next stream opens the model again', async () => {
    const { link, sent, answer } = linked();
    const opened = link.ready('tiny');
    answer({ type: 'voicecall:stt-opened', model: 'tiny' });
    await opened;
    const readings = [link.read('tiny', Int16Array.of(1), 8000, []), link.read('tiny', Int16Array.of(2), 8000, [])];
    answer({ type: 'voicecall:stt-crashed', message: 'the machine recogniser died (SIGKILL)' });
    for (const reading of readings)
      await expect(reading).rejects.toSatisfy((err) => isSttError(err, 'STT_ENGINE_CRASHED'));
    void link.ready('tiny');
    expect(sent.filter((r) => r.type === 'voicecall:stt-open')).toHaveLength(2);
  });

  it('closing one model’s engine fails and cancels only that model’s readings', async () => {
    const { link, sent, answer } = linked();
    const tiny = link.read('tiny', Int16Array.of(1), 8000, []);
    const base = link.read('base', Int16Array.of(2), 8000, []);
    link.fail('base', new SttError('STT_ENGINE_CRASHED', 'closed'));
    await expect(base).rejects.toThrow('closed');
    expect(sent.at(-1)).toEqual({ type: 'voicecall:stt-cancel', id: 2 });
    answer({ type: 'voicecall:stt-text', id: 1, text: 'still here' });
    expect(await tiny).toBe('still here');
  });

  it('ignores messages on the channel that are not the recogniser’s', () => {
    const { link } = linked();
    expect(() => link.onMessage({ type: 'voicecall:ready' })).not.toThrow();
    expect(() => link.onMessage('hello')).not.toThrow();
  });
});
