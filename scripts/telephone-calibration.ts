// Synthetic calibration speech for the telephone model variant: sentences typical of phone calls
// (none of them a fixture phrase: media/fixtures/transcripts.json is the test set, and so are the
// asterisk recordings), the flite voices that speak them, and the carrier path a phone call takes.
// Shared by scripts/derive-telephone-cmn.ts and scripts/derive-telephone-mllr.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { resample } from '../src/audio/resampler.ts';
import { PROJECT_ROOT } from '../src/speech/stt/pocketsphinx/models.ts';

export const CALIBRATION_SENTENCES = [
  'hello i am returning a call from earlier today',
  'could you check the status of my delivery',
  'the parcel was supposed to arrive on friday',
  'i moved last month and my address has changed',
  'do you have any openings later this week',
  'i would prefer the afternoon if possible',
  'my date of birth is the twelfth of march',
  'can you spell that for me please',
  'i think there is a mistake on my bill',
  'the charge appeared twice on my card',
  'how long will the repair take',
  'is there a fee for changing the booking',
  'i will be there in about twenty minutes',
  'let me find my reference number',
  'we spoke yesterday about the same problem',
  'please call me back on my mobile',
  'the internet has been down since the morning',
  'could i get a refund instead',
  'what time do you close on sunday',
  'i am not sure which plan i am on',
] as const;

/** More of the same kind, for estimating an acoustic-model transform (more data than a mean needs). */
export const ADAPTATION_SENTENCES = [
  'good morning i am calling to ask about my insurance policy',
  'the engineer said he would come between eight and noon',
  'could you send the forms to my home address',
  'i have been waiting on hold for almost half an hour',
  'my card was declined at the shop this morning',
  'we would like a table for four at seven thirty',
  'the heating in our flat stopped working last night',
  'can i pay the balance over the phone',
  'the tracking page says it was delivered but nothing is here',
  'i need a copy of my last three statements',
  'my husband usually handles the account',
  'is it possible to speak with the manager',
  'the zip code is nine zero two one zero',
  'i changed my password and now i cannot log in',
  'the prescription should be ready after lunch',
  'please cancel the subscription at the end of the month',
  'i lost my wallet and need a new card',
  'what documents should i bring with me',
  'our flight was delayed by six hours',
  'the meeting has been moved to thursday afternoon',
  'can you confirm the total amount including tax',
  'i was charged a late fee that i do not understand',
  'the water bill is much higher than usual',
  'do you deliver to the countryside',
  'my son has a dentist appointment on wednesday',
  'the screen on my laptop is cracked',
  'i ordered the blue one but received a red one',
  'how do i update my billing details',
  'i am a new customer and need some help',
  'we are moving house at the end of september',
  'could you leave a message with my colleague',
  'the line keeps dropping every few minutes',
  'i want to add my daughter to the policy',
  'is parking available near your building',
  'my reference is seven one zero eight four',
  'the boiler is making a loud banging noise',
  'can you book me a taxi to the station',
  'i would like to return these shoes',
  'the price on the website was different',
  'i have an allergy to penicillin',
  'we need a plumber as soon as possible',
  'my contract ends in november',
  'please check whether the payment went through',
  'i will call again after the weekend',
  'the car makes a strange noise when i brake',
  'our internet speed is very slow in the evening',
  'can i change the delivery to a different day',
  'the doctor asked me to call for my results',
  'i forgot my pin number',
  'do you offer a discount for students',
  'the alarm went off in the middle of the night',
  'i would like to speak to someone in sales',
  'my package was left with a neighbour',
  'how many days does the transfer usually take',
  'there is a leak under the kitchen sink',
  'i need to report a stolen phone',
  'can someone call me before they arrive',
  'the receipt shows the wrong date',
  'we are expecting about fifty guests',
  'thanks for your help with this today',
] as const;

export const CALIBRATION_VOICES = ['rms', 'slt', 'awb', 'kal16'] as const;

/** 16 kHz speech as the telephone path delivers it to the recogniser. */
export function throughTelephone(wide: Int16Array): Int16Array {
  const ulaw = muLawEncode(resample(wide, 16000, 8000));
  return resample(muLawDecode(ulaw), 8000, 16000);
}

/** Throws when a calibration sentence contains a fixture phrase (the fixtures are a test set). */
export function assertNoFixturePhrase(sentences: readonly string[]): void {
  const fixtures = JSON.parse(readFileSync(join(PROJECT_ROOT, 'media', 'fixtures', 'transcripts.json'), 'utf8')) as {
    text: string;
  }[];
  for (const s of sentences) {
    const hit = fixtures.find((f) => s.includes(f.text));
    if (hit) throw new Error(`calibration sentence "${s}" contains the fixture phrase "${hit.text}"`);
  }
}
