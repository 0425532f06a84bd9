// Write-only fields: a secret the API takes is marked once in its zod schema (writeOnly), and
// from that mark alone it is left out of every response and sealed in the store.
import { z } from 'zod';
import { fieldsWhere, withFieldsChanged, type FieldPath } from '../schema-fields.ts';
import { isSealed, SEALED_PREFIX, type SecretBox } from './sealed.ts';

const notSealed = (value: string) => !isSealed(value);

/** A secret string the API takes and never gives back (an API key, a password). */
export function writeOnlySecret(
  description = 'write-only: never returned',
  format?: { pattern: RegExp; message: string; max?: number },
) {
  const text = z.string().min(1);
  return (format ? text.max(format.max ?? 10_000).regex(format.pattern, format.message) : text)
    .refine(notSealed, `must not start with ${SEALED_PREFIX}`)
    .meta({ writeOnly: true, description });
}

/** Header values (or any map of strings) the API takes and never gives back, the names with them. */
export function writeOnlyStringMap(description = 'write-only: never returned') {
  return z
    .record(z.string(), z.string().refine(notSealed, `must not start with ${SEALED_PREFIX}`))
    .meta({ writeOnly: true, description });
}

/** The write-only fields of one kind of document, found from its schema. */
export class SecretFields {
  readonly paths: readonly FieldPath[];

  constructor(schema: z.ZodType) {
    this.paths = fieldsWhere(schema, (node) => node.writeOnly === true);
  }

  /** The document as responses show it: every secret left out. */
  hide<T>(document: T): T {
    return withFieldsChanged(document, this.paths, () => undefined);
  }

  /** The document as the store keeps it: every secret sealed (a value already sealed is kept). */
  seal<T>(document: T, box: SecretBox): T {
    return withFieldsChanged(document, this.paths, (value) =>
      mapStrings(value, (s) => (isSealed(s) ? s : box.seal(s))),
    );
  }

  /** The document as the runtime uses it: every secret opened (plaintext from before sealing passes as it is). */
  open<T>(document: T, box: SecretBox): T {
    return withFieldsChanged(document, this.paths, (value) => mapStrings(value, (s) => box.open(s)));
  }

  /** Whether any secret of the stored document is still plaintext (written before sealing). */
  hasPlaintext(document: unknown): boolean {
    let found = false;
    withFieldsChanged(document, this.paths, (value) => mapStrings(value, (s) => ((found ||= !isSealed(s)), s)));
    return found;
  }
}

/** A secret is a string, or a map of strings (header values). */
function mapStrings(value: unknown, change: (s: string) => string): unknown {
  if (typeof value === 'string') return change(value);
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? change(v) : v]));
  }
  return value;
}
