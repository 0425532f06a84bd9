import { describe, expect, it } from 'vitest';
import { safeToolName, ToolNames } from '../../../src/tools/mcp/naming.ts';

describe('MCP tool names the model calls', () => {
  it('keeps a name the model accepts as it is', () => {
    expect(safeToolName('get-sum')).toBe('get-sum');
    expect(safeToolName('lookup_order_2')).toBe('lookup_order_2');
  });

  it('replaces every character a function name cannot hold with _ and cuts at 64', () => {
    expect(safeToolName('orders.find by/id')).toBe('orders_find_by_id');
    expect(safeToolName('x'.repeat(100))).toBe('x'.repeat(64));
    expect(safeToolName('')).toBe('tool');
  });

  it("leaves the agent's own tools their names and gives a clashing server tool the first free suffix", () => {
    const names = new ToolNames(['end_call', 'lookup']);
    expect(names.claim('lookup')).toBe('lookup_2');
    expect(names.claim('lookup')).toBe('lookup_3');
    expect(names.claim('end_call')).toBe('end_call_2');
    expect(names.claim('echo')).toBe('echo');
  });

  it('makes names unique after they are made safe, in the order they are claimed', () => {
    const names = new ToolNames();
    expect(['a.b', 'a_b', 'a/b'].map((n) => names.claim(n))).toEqual(['a_b', 'a_b_2', 'a_b_3']);
  });

  it('keeps a suffixed long name within 64 characters', () => {
    const names = new ToolNames();
    const long = 'y'.repeat(80);
    expect(names.claim(long)).toBe('y'.repeat(64));
    const second = names.claim(long);
    expect(second).toBe(`${'y'.repeat(62)}_2`);
    expect(second).toHaveLength(64);
  });
});
