// Speech audio (TTS engines, VAD test sets). Debian packages only: nothing is fetched at run time.
export const apt = [
  ['flite', 'embedded default text-to-speech engine (voices slt, rms, awb, kal) and fixture generation'],
  ['espeak-ng', 'text-to-speech engine with many languages'],
  ['asterisk-core-sounds-en-wav', '8 kHz human telephone prompts: a test set only for VAD/STT'],
  ['asterisk-core-sounds-en', 'transcripts (core-sounds-en.txt) of the asterisk telephone prompts'],
  ['asterisk-moh-opsound-wav', 'music on hold: VAD false-positive test set'],
];
