// Shared pieces of the property-based fuzz tests (test/e2e/fuzz-*.test.ts): raw HTTP that sends
// whatever a property generates (any method, header or body, bytes included), mutations of valid
// JSON bodies, and the seed every property runs with.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { ErrorBodySchema } from '../../src/http/schemas.ts';

/**
 * The seed of every property: fixed, so a run is reproducible and CI sees the same cases; set
 * FUZZ_SEED to explore others. fast-check prints the seed and path of a failure with its shrunk
 * counterexample; FUZZ_SEED plus that path replays it.
 */
export const FUZZ_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20_260_520;

/** FUZZ_SCALE multiplies every property's run count, for a longer search than CI's (default 1). */
export const runs = (n: number) =>
  Math.max(1, Math.round(n * (process.env.FUZZ_SCALE ? Number(process.env.FUZZ_SCALE) : 1)));

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Milliseconds from sending to the end of the answer. */
  ms: number;
}

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array | undefined;
}

/**
 * One request over a fresh connection, exactly as given: node:http, not fetch, so a GET can carry
 * a body and any method or header byte goes out as generated. Rejects when no answer comes in
 * `timeoutMs` (a hang is a failure of the property, not a slow test).
 */
export function rawRequest(baseUrl: string, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (error: Error | null, res?: RawResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(res!);
    };
    const body =
      req.body === undefined
        ? undefined
        : typeof req.body === 'string'
          ? Buffer.from(req.body, 'utf8')
          : Buffer.from(req.body);
    const headers: Record<string, string> = { ...req.headers };
    if (body !== undefined) headers['content-length'] = String(body.length);
    const client = httpRequest(
      { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          finish(null, {
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          }),
        );
        res.on('error', (error) => finish(error));
      },
    );
    const timer = setTimeout(() => {
      client.destroy();
      finish(new Error(`no answer to ${req.method} ${req.path} within ${timeoutMs} ms`));
    }, timeoutMs);
    client.on('error', (error) => finish(error));
    // The server may answer (401, 413) and close before it read a large body: the answer counts.
    if (body !== undefined) client.write(body, () => undefined);
    client.end();
  });
}

/** The one error shape of docs/contract.md, as test/helpers/service.ts's errorOf checks it. */
export function errorBodyProblem(res: RawResponse): string | null {
  let json: unknown;
  try {
    json = JSON.parse(res.text);
  } catch {
    return `the ${res.status} body is not JSON: ${JSON.stringify(res.text.slice(0, 200))}`;
  }
  const parsed = ErrorBodySchema.strict().safeParse(json);
  return parsed.success ? null : `the ${res.status} body is not {error, details, code}: ${res.text.slice(0, 300)}`;
}

// ---------------------------------------------------------------------------------------------
// Mutations of valid JSON bodies.

/** Sets an own, enumerable key, `__proto__` included (plain assignment would set the prototype). */
function setKey(target: Record<string, Json>, key: string, value: Json): void {
  Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true });
}

/** A deep copy whose keys are all own data properties (JSON.parse keeps `__proto__` as a key). */
const clone = (value: Json): Json => JSON.parse(JSON.stringify(value)) as Json;

type Path = (string | number)[];

function pathsOf(value: Json, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => pathsOf(v, [...at, i], out));
  else if (value !== null && typeof value === 'object')
    for (const key of Object.keys(value)) pathsOf(value[key]!, [...at, key], out);
  return out;
}

function nodeAt(root: Json, path: Path): Json {
  let node: Json = root;
  for (const step of path) node = (node as Record<string | number, Json>)[step]!;
  return node;
}

export type Mutation =
  | { kind: 'drop'; at: number }
  | { kind: 'replace'; at: number; value: Json }
  | { kind: 'wrap'; at: number }
  | { kind: 'nest'; at: number; depth: number; asArray: boolean }
  | { kind: 'addKey'; at: number; key: string; value: Json };

/** Applies the mutations in turn; `at` picks a node (root included) modulo the nodes there are. */
export function mutate(valid: Json, mutations: readonly Mutation[]): Json {
  let root = clone(valid);
  for (const m of mutations) {
    const paths = pathsOf(root);
    const path = paths[m.at % paths.length]!;
    const current = nodeAt(root, path);
    let next: Json | undefined;
    switch (m.kind) {
      case 'drop':
        next = undefined;
        break;
      case 'replace':
        next = clone(m.value);
        break;
      case 'wrap':
        next = [current];
        break;
      case 'nest': {
        next = current;
        for (let i = 0; i < m.depth; i++) {
          if (m.asArray) next = [next];
          else {
            const holder: Record<string, Json> = {};
            setKey(holder, 'a', next);
            next = holder;
          }
        }
        break;
      }
      case 'addKey': {
        if (current === null || typeof current !== 'object' || Array.isArray(current)) continue;
        setKey(current, m.key, clone(m.value));
        continue;
      }
    }
    if (path.length === 0) {
      root = next ?? null;
      continue;
    }
    const parent = nodeAt(root, path.slice(0, -1)) as Record<string | number, Json> | Json[];
    const last = path[path.length - 1]!;
    if (Array.isArray(parent)) {
      if (next === undefined) parent.splice(last as number, 1);
      else parent[last as number] = next;
    } else if (next === undefined) delete parent[last];
    else setKey(parent, last as string, next);
  }
  return root;
}

/** Objects whose own keys are the prototype's names, as a JSON body can carry them. */
const pollution = JSON.parse(
  '{"__proto__":{"polluted":"yes","isAdmin":true},"constructor":{"prototype":{"polluted":"yes"}}}',
) as Json;

/** Values a field never expects: other types, extreme numbers, odd strings, containers. */
export const WEIRD_VALUES: Json[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  -0.000001,
  1e308,
  -1e308,
  2 ** 53 + 2,
  -(2 ** 63),
  4_294_967_296,
  '',
  ' ',
  '0',
  '-1',
  'null',
  'NaN',
  'ünïcödé ✓ 🎉 𝕏 مرحبا 你好',
  '\u0000',
  '\ud800',
  '\u202e\u200b',
  '%00%2e%2e%2f',
  '../../etc/passwd',
  "' OR 1=1 --",
  'x'.repeat(20_000),
  '+14155550100',
  'production',
  'latest',
  '__proto__',
  [],
  {},
  [null],
  [[[]]],
  ['a', 1, null, {}],
  pollution,
];

export const PROTO_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
];

export const jsonArb: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;

export const weirdValueArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...WEIRD_VALUES) },
  { weight: 1, arbitrary: jsonArb },
  { weight: 1, arbitrary: fc.double().map((d) => (Number.isFinite(d) ? d : null)) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
);

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: weirdValueArb }),
  fc.record({ kind: fc.constant('wrap' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('nest' as const),
    at: fc.nat(),
    depth: fc.integer({ min: 1, max: 80 }),
    asArray: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('addKey' as const),
    at: fc.nat(),
    key: fc.oneof(
      fc.constantFrom(...PROTO_KEYS, '', ' ', 'agent_id', 'limit', 'ünï', '\u0000'),
      fc.string({ maxLength: 12 }),
    ),
    value: weirdValueArb,
  }),
);

/** A header value Node will send: tab, printable ASCII and Latin-1, no CR/LF. */
export const headerValueArb = (maxLength = 64): fc.Arbitrary<string> =>
  fc
    .array(fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff }), fc.constant(0x09)), {
      maxLength,
    })
    .map((codes) => String.fromCharCode(...codes));

/** Everything in `text` from `secrets` that it must not contain. */
export const leaked = (text: string, secrets: readonly string[]) => secrets.filter((s) => text.includes(s));
