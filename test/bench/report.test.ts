import { describe, expect, it } from 'vitest';
import { markdownTable, stats, svgChart } from '../../bench/report.ts';

describe('bench report helpers', () => {
  it('nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(stats(values)).toEqual({ p50: 50, p90: 90, p95: 95, p99: 99, max: 100, num: 100 });
    expect(stats([])).toBeNull();
    expect(stats([7])).toEqual({ p50: 7, p90: 7, p95: 7, p99: 7, max: 7, num: 1 });
  });

  it('markdown table with escaped pipes', () => {
    expect(markdownTable([{ a: 'x|y', b: 2 }])).toBe('| a | b |\n|---|---|\n| x\\|y | 2 |');
  });

  it('svg chart is one svg element per call', () => {
    const svg = svgChart('t <1>', [{ name: 'm', unit: 'ms', s: { p50: 1, p90: 2, p95: 3, p99: 3, max: 3, num: 3 } }]);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('t &lt;1>');
  });
});
