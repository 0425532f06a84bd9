// Imports point down: a room (a folder under src/, or a file at its top) may import only from rooms
// on a lower layer. The table is the house's floor plan; a new room must be placed in it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Bottom first. Rooms on one layer may not import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ['errors'],
  ['clock', 'timers', 'config', 'logger'],
  ['audio', 'schema-fields'],
  ['net', 'secrets'],
  ['credentials'],
  ['agents', 'auth'],
  ['carrier-accounts'],
  ['speech', 'llm'],
  ['tools'],
  ['analysis'],
  ['records'],
  ['call'],
  ['carriers', 'campaigns', 'metrics', 'telemetry', 'webhooks'],
  ['agent-tests'],
  ['store'],
  ['transports', 'demo'],
  ['http'],
  ['app', 'cluster'],
  ['main'],
];

const SRC = resolve(import.meta.dirname, '..', 'src');

interface Edge {
  from: string;
  to: string;
}

/** A file's room: its first folder under src/, or its own name for a file at the top. */
export function roomOf(file: string, src: string = SRC): string {
  const parts = relative(src, file).split(sep);
  return parts.length > 1 ? parts[0]! : parts[0]!.replace(/\.(ts|mjs|js)$/, '');
}

/** Relative import specifiers of a module: static and dynamic imports, re-exports, worker URLs. */
export function specifiersOf(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\bfrom\s+'(\.[^']+)'/g,
    /\bimport\s*\(\s*'(\.[^']+)'\s*\)/g,
    /^\s*import\s+'(\.[^']+)'/gm,
    /new URL\(\s*'(\.[^']+)'\s*,\s*import\.meta\.url/g,
  ];
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1]!);
  return found;
}

/** Edges that run sideways or up the table, or touch a room the table does not place. */
export function violations(
  edges: readonly Edge[],
  layers: readonly (readonly string[])[] = LAYERS,
  src: string = SRC,
): string[] {
  const level = new Map<string, number>();
  layers.forEach((rooms, i) => rooms.forEach((room) => level.set(room, i)));
  const out: string[] = [];
  for (const { from, to } of edges) {
    const a = roomOf(from, src);
    const b = roomOf(to, src);
    if (a === b) continue;
    const where = `${relative(src, from)} imports ${relative(src, to)}`;
    if (!level.has(a) || !level.has(b)) out.push(`${where}: room ${level.has(a) ? b : a} is not in the layer table`);
    else if (level.get(b)! >= level.get(a)!)
      out.push(`${where}: ${b} is ${level.get(b) === level.get(a) ? 'on the same layer as' : 'above'} ${a}`);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs|js)$/.test(entry.name) ? [path] : [];
  });
}

function importEdges(): { edges: Edge[]; unresolved: string[] } {
  const edges: Edge[] = [];
  const unresolved: string[] = [];
  for (const file of sourceFiles(SRC)) {
    for (const specifier of specifiersOf(readFileSync(file, 'utf8'))) {
      const target = resolve(dirname(file), specifier);
      if (existsSync(target)) edges.push({ from: file, to: target });
      else unresolved.push(`${relative(SRC, file)}: ${specifier}`);
    }
  }
  return { edges, unresolved };
}

describe('import direction', () => {
  it('no file under src/ imports from a room above or beside its own', () => {
    const { edges, unresolved } = importEdges();
    expect(unresolved).toEqual([]);
    expect(edges.length).toBeGreaterThan(200);
    expect(violations(edges)).toEqual([]);
  });

  it('every room under src/ has its place in the layer table', () => {
    const rooms = new Set(sourceFiles(SRC).map((file) => roomOf(file)));
    expect([...rooms].filter((room) => !LAYERS.some((layer) => layer.includes(room)))).toEqual([]);
  });

  it('the check reports an import that runs up, one that runs sideways, and an unplaced room', () => {
    const at = (path: string) => join(SRC, path);
    const found = violations([
      { from: at('audio/pcm.ts'), to: at('speech/types.ts') },
      { from: at('speech/provider.ts'), to: at('llm/client.ts') },
      { from: at('call/session.ts'), to: at('audio/pcm.ts') },
      { from: at('garden/shed.ts'), to: at('audio/pcm.ts') },
    ]);
    expect(found).toEqual([
      'audio/pcm.ts imports speech/types.ts: speech is above audio',
      'speech/provider.ts imports llm/client.ts: llm is on the same layer as speech',
      'garden/shed.ts imports audio/pcm.ts: room garden is not in the layer table',
    ]);
  });

  it('reads static, dynamic and side-effect imports, re-exports and worker URLs', () => {
    const text = [
      "import { a } from './a.ts';",
      "export { b } from '../b.ts';",
      "import './c.ts';",
      "const d = await import('./d.ts');",
      "new Worker(new URL('./worker-entry.mjs', import.meta.url));",
      "import { z } from 'zod';",
    ].join('\n');
    expect(specifiersOf(text).sort()).toEqual(['../b.ts', './a.ts', './c.ts', './d.ts', './worker-entry.mjs']);
  });
});
