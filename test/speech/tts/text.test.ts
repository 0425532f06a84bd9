import { describe, expect, it } from 'vitest';
import { splitForSpeech } from '../../../src/speech/tts/text.ts';

describe('splitting text for speech', () => {
  it('breaks after sentence ends and clause punctuation so the first piece is short', () => {
    expect(splitForSpeech('Hello there, how can I help you today? I can book it.')).toEqual([
      'Hello there,',
      'how can I help you today?',
      'I can book it.',
    ]);
  });

  it('joins pieces too short to be worth their own synthesis', () => {
    expect(splitForSpeech('Yes. OK. That works for me.')).toEqual(['Yes. OK. That works for me.']);
    expect(splitForSpeech('That works for me. OK.')).toEqual(['That works for me. OK.']);
  });

  it('keeps decimals and times together and gives nothing for blank text', () => {
    expect(splitForSpeech('It costs 3.50 dollars at 3:30 pm')).toEqual(['It costs 3.50 dollars at 3:30 pm']);
    expect(splitForSpeech('  \n ')).toEqual([]);
  });
});
