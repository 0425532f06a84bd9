// What the runtime itself tells the model, apart from the caller's words: the notes that ask for a
// warm transfer's summary or a reminder, say a transfer failed, or refuse a browser call's transfer.
// The demo model (src/demo/script.ts) recognises them by these openings.

/** How the model is asked for a warm transfer's summary. */
export const TRANSFER_SUMMARY_NOTE = 'You are handing this call over to a colleague who just answered.';

/** How the model is told a transfer did not go through. */
export const TRANSFER_FAILED_NOTE = 'The transfer did not go through';

/** How the model is told, for a reminder, that the caller has gone quiet. */
export const REMINDER_NOTE_PREFIX = 'The caller has said nothing for';

/** What the model hears when it tries to transfer a browser call. */
export const WEB_TRANSFER_REFUSAL =
  'Transfers need a phone line, and this is a browser call: the caller cannot be transferred. Tell them, and offer what you can do here.';

/** The system note asking for a warm transfer's summary. */
export function transferSummaryRequest(): string {
  return `${TRANSFER_SUMMARY_NOTE} Speak to them in two short sentences: who is calling and what they need. Do not call tools.`;
}

/** The note the model gets once the caller is back after a transfer to `to` failed (`why`). */
export function transferFailedNote(to: string, why: string): string {
  return `${TRANSFER_FAILED_NOTE} to ${to}: ${why}. The caller is back on the line with you; tell them and offer to help another way.`;
}

/** The system note asking for a reminder after `silentS` seconds of silence. */
export function reminderRequest(silentS: number): string {
  return `${REMINDER_NOTE_PREFIX} ${silentS} seconds. Say one short sentence to check whether they are still there.`;
}
