import { describe, expect, it } from 'vitest';
import { McpCatalog, mcpServerKey, type McpListedTool } from '../../../src/tools/mcp/catalog.ts';

const ECHO: McpListedTool = { name: 'echo', description: 'Echoes', inputSchema: { type: 'object' } };
const SUM: McpListedTool = { name: 'sum', description: 'Adds', inputSchema: { type: 'object' } };
const server = { url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer a' } };

/** A listing function that counts how often it was asked. */
function lister(tools: readonly McpListedTool[] = [ECHO]) {
  const counted = { calls: 0, list: async () => (counted.calls++, tools) };
  return counted;
}

describe('the MCP listing cache', () => {
  it("reuses a server's listing for a minute, across calls, and lists again after it", async () => {
    let now = 1_000;
    const catalog = new McpCatalog(() => now);
    const listing = lister();
    expect(await catalog.tools(server, listing.list)).toEqual([ECHO]);
    now += 59_999;
    expect(await catalog.tools(server, listing.list)).toEqual([ECHO]);
    expect(listing.calls).toBe(1);
    now += 1;
    await catalog.tools(server, listing.list);
    expect(listing.calls).toBe(2);
  });

  it('keeps one listing per URL and headers: other headers or another URL are listed on their own', async () => {
    const catalog = new McpCatalog(() => 0);
    const listing = lister();
    await catalog.tools(server, listing.list);
    await catalog.tools({ ...server, headers: { authorization: 'Bearer b' } }, listing.list);
    await catalog.tools({ url: 'https://mcp.example.com/other', headers: server.headers }, listing.list);
    expect(listing.calls).toBe(3);
  });

  it('takes headers in any order and any case for the same server', () => {
    expect(mcpServerKey({ url: 'https://m/mcp', headers: { 'X-A': '1', b: '2' } })).toBe(
      mcpServerKey({ url: 'https://m/mcp', headers: { B: '2', 'x-a': '1' } }),
    );
    expect(mcpServerKey({ url: 'https://m/mcp' })).toBe(mcpServerKey({ url: 'https://m/mcp', headers: {} }));
  });

  it('does not keep header values in its key', () => {
    expect(mcpServerKey(server)).not.toContain('Bearer');
    expect(mcpServerKey(server)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('shares one listing under way between calls that start together', async () => {
    const catalog = new McpCatalog(() => 0);
    let release: (tools: McpListedTool[]) => void = () => undefined;
    let calls = 0;
    const list = () => (calls++, new Promise<McpListedTool[]>((resolve) => (release = resolve)));
    const first = catalog.tools(server, list);
    const second = catalog.tools(server, list);
    release([SUM]);
    expect(await Promise.all([first, second])).toEqual([[SUM], [SUM]]);
    expect(calls).toBe(1);
  });

  it('does not keep a failed listing: the next call asks again', async () => {
    const catalog = new McpCatalog(() => 0);
    await expect(catalog.tools(server, () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    const listing = lister([SUM]);
    expect(await catalog.tools(server, listing.list)).toEqual([SUM]);
    expect(listing.calls).toBe(1);
  });
});
