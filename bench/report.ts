// Shared formatting for the benches: tinybench rows with ops/s and p99, Markdown tables and a
// small SVG bar chart for the load harness (pure functions, unit-tested in test/bench/), and the
// one writer of a bench's results under artifacts/bench.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Bench, Task } from 'tinybench';

/** Where the benches leave their results. */
const ARTIFACTS_DIR = join(import.meta.dirname, '..', 'artifacts', 'bench');

/** Writes a bench's results as `<name>.json` and `<name>.md` under ARTIFACTS_DIR; returns the path before `.json`. */
export function writeArtifacts(name: string, summary: unknown, md: string): string {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const base = join(ARTIFACTS_DIR, name);
  writeFileSync(`${base}.json`, `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(`${base}.md`, `${md.trimEnd()}\n`);
  return base;
}

export interface TaskRow {
  task: string;
  'ops/s (median)': string;
  'median µs': string;
  'p99 µs': string;
  samples: number;
}

/** One row per task; medians lead because a shared machine inflates means and p99 by time slices. */
export function taskRows(bench: Bench): TaskRow[] {
  return bench.tasks.map((task: Task) => {
    const r = task.result;
    if (r.state !== 'completed')
      return { task: task.name, 'ops/s (median)': r.state, 'median µs': '', 'p99 µs': '', samples: 0 };
    return {
      task: task.name,
      'ops/s (median)': Math.round(1000 / r.latency.p50).toLocaleString('en-US'),
      'median µs': (r.latency.p50 * 1000).toFixed(2),
      'p99 µs': (r.latency.p99 * 1000).toFixed(2),
      samples: r.latency.samplesCount,
    };
  });
}

/** A GitHub Markdown table of `rows` (columns from the first row's keys). */
export function markdownTable(rows: ReadonlyArray<Record<string, string | number>>): string {
  if (rows.length === 0) return '';
  const cols = Object.keys(rows[0]!);
  const cell = (v: string | number | undefined) => String(v ?? '').replaceAll('|', '\\|');
  return [
    `| ${cols.join(' | ')} |`,
    `|${cols.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${cols.map((c) => cell(row[c])).join(' | ')} |`),
  ].join('\n');
}

export interface SeriesStats {
  p50: number;
  p90: number;
  /** The voice-to-voice capacity measure is read at p95. */
  p95: number;
  p99: number;
  max: number;
  num: number;
}

/** Nearest-rank percentiles; null when there are no samples. */
export function stats(values: readonly number[]): SeriesStats | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1]!;
  const round = (v: number) => Math.round(v * 100) / 100;
  return {
    p50: round(at(50)),
    p90: round(at(90)),
    p95: round(at(95)),
    p99: round(at(99)),
    max: round(sorted.at(-1)!),
    num: sorted.length,
  };
}

/** Grouped horizontal bars (p50, p90, p99) per metric, each metric scaled to its own max. */
export function svgChart(
  title: string,
  metrics: ReadonlyArray<{ name: string; unit: string; s: SeriesStats }>,
): string {
  const rowH = 54;
  const width = 760;
  const left = 250;
  const barW = width - left - 120;
  const colors = { p50: '#4e79a7', p90: '#f28e2b', p99: '#e15759' } as const;
  const esc = (t: string) => t.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
  const parts: string[] = [`<text x="10" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`];
  metrics.forEach((m, i) => {
    const y = 40 + i * rowH;
    const scale = m.s.max > 0 ? barW / m.s.max : 0;
    parts.push(`<text x="10" y="${y + 26}" font-size="12">${esc(m.name)} (${esc(m.unit)})</text>`);
    (['p50', 'p90', 'p99'] as const).forEach((k, j) => {
      const w = Math.max(1, m.s[k] * scale);
      parts.push(`<rect x="${left}" y="${y + j * 15}" width="${w.toFixed(1)}" height="12" fill="${colors[k]}"/>`);
      parts.push(`<text x="${(left + w + 4).toFixed(1)}" y="${y + j * 15 + 10}" font-size="10">${k} ${m.s[k]}</text>`);
    });
  });
  const height = 50 + metrics.length * rowH;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>\n`;
}
