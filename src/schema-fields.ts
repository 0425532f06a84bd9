// Fields of a zod schema picked by what their JSON Schema says (write-only, a URL), and the values
// a document holds at them. One walk serves the secrets (secrets/fields.ts) and the URL check
// (refuseUrlFields, for the egress policy), so a field marked once in its schema is found everywhere it is used.
import { z } from 'zod';
import { ApiError } from './errors.ts';

/** A field's place: property names, and `*` for every item of an array or value of a record. */
export type FieldPath = readonly string[];

interface JsonSchemaNode {
  properties?: Record<string, JsonSchemaNode>;
  items?: JsonSchemaNode | JsonSchemaNode[];
  prefixItems?: JsonSchemaNode[];
  additionalProperties?: JsonSchemaNode | boolean;
  anyOf?: JsonSchemaNode[];
  oneOf?: JsonSchemaNode[];
  allOf?: JsonSchemaNode[];
  [keyword: string]: unknown;
}

/** Every field of `schema` (as clients send it) whose JSON Schema `matches`; its insides are not searched. */
export function fieldsWhere(
  schema: z.ZodType,
  matches: (node: Readonly<Record<string, unknown>>) => boolean,
): FieldPath[] {
  const root = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    reused: 'inline',
    cycles: 'throw',
  }) as JsonSchemaNode;
  const found = new Map<string, FieldPath>();
  const walk = (node: JsonSchemaNode, path: FieldPath): void => {
    if (path.length > 0 && matches(node)) {
      found.set(path.join('\u0000'), path);
      return;
    }
    for (const [key, child] of Object.entries(node.properties ?? {})) walk(child, [...path, key]);
    const items = Array.isArray(node.items) ? node.items : node.items ? [node.items] : [];
    for (const child of [...items, ...(node.prefixItems ?? [])]) walk(child, [...path, '*']);
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, [...path, '*']);
    for (const child of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])]) walk(child, path);
  };
  walk(root, []);
  return [...found.values()];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The values `document` holds at `path`, each with its own path (array indices and record keys filled in). */
export function valuesAt(document: unknown, path: FieldPath): [string[], unknown][] {
  const out: [string[], unknown][] = [];
  const walk = (value: unknown, rest: FieldPath, at: string[]): void => {
    if (rest.length === 0) {
      if (value !== undefined) out.push([at, value]);
      return;
    }
    const [head, ...tail] = rest as [string, ...string[]];
    if (head === '*') {
      if (Array.isArray(value)) value.forEach((item, i) => walk(item, tail, [...at, String(i)]));
      else if (isRecord(value)) for (const [key, item] of Object.entries(value)) walk(item, tail, [...at, key]);
    } else if (isRecord(value) && Object.hasOwn(value, head)) {
      walk(value[head], tail, [...at, head]);
    }
  };
  walk(document, path, []);
  return out;
}

/**
 * A copy of `document` with the value at each of `paths` replaced by `change(value)`, or removed
 * where it returns undefined. The document itself is left as it was.
 */
export function withFieldsChanged<T>(document: T, paths: readonly FieldPath[], change: (value: unknown) => unknown): T {
  const copy = structuredClone(document);
  const walk = (value: unknown, rest: FieldPath): void => {
    const [head, ...tail] = rest as [string, ...string[]];
    const keys =
      head === '*'
        ? Array.isArray(value)
          ? value.map((_, i) => i)
          : isRecord(value)
            ? Object.keys(value)
            : []
        : isRecord(value) && Object.hasOwn(value, head)
          ? [head]
          : [];
    const holder = value as Record<string | number, unknown>;
    for (const key of keys) {
      if (tail.length > 0) {
        walk(holder[key], tail);
        continue;
      }
      const next = change(holder[key]);
      if (next === undefined && !Array.isArray(value)) delete holder[key];
      else holder[key] = next;
    }
  };
  for (const path of paths) walk(copy, path);
  return copy;
}

/** Every URL field of a schema (`z.url()`: JSON Schema format uri). */
export function urlFieldsOf(schema: z.ZodType): FieldPath[] {
  return fieldsWhere(schema, (node) => node.format === 'uri');
}

/**
 * The one check of every URL the API takes: a literal address `refusal` refuses (the egress
 * policy's) is a 400 naming each field, not a request that fails later.
 */
export function refuseUrlFields(
  paths: readonly FieldPath[],
  document: unknown,
  refusal: (url: string) => string | null,
  prefix = 'body',
): void {
  const refused: string[] = [];
  for (const path of paths) {
    for (const [at, url] of valuesAt(document, path)) {
      if (typeof url !== 'string') continue;
      const why = refusal(url);
      if (why) refused.push(`${[prefix, ...at].join('.')}: ${url} is ${why}, which the egress policy refuses`);
    }
  }
  if (refused.length > 0) throw new ApiError('BAD_REQUEST', refused.join('; '));
}
