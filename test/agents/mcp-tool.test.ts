// An MCP server on an agent (tools: [{type: "mcp", url, headers?, allowed_tools?}]): its defaults,
// its headers write-only like an HTTP tool's, its URL checked by the egress policy like every URL field.
import { describe, expect, it } from 'vitest';
import { AGENT_SECRETS, AGENT_URL_FIELDS, AgentConfigSchema } from '../../src/agents/schema.ts';
import { EgressPolicy } from '../../src/net/egress.ts';
import { refuseUrlFields } from '../../src/schema-fields.ts';

const agent = (tools: unknown[]) =>
  AgentConfigSchema.safeParse({ agent_name: 'M', llm: { base_url: 'https://m.example.com/v1', model: 'm' }, tools });

describe('an MCP server among an agent’s tools', () => {
  it('takes url, headers and allowed_tools, with the HTTP tools’ timeout by default', () => {
    const parsed = agent([
      {
        type: 'mcp',
        url: 'https://mcp.example.com/mcp',
        headers: { authorization: 'Bearer k' },
        allowed_tools: ['echo'],
      },
    ]);
    expect(parsed.success && parsed.data.tools[0]).toEqual({
      type: 'mcp',
      url: 'https://mcp.example.com/mcp',
      headers: { authorization: 'Bearer k' },
      allowed_tools: ['echo'],
      timeout: 10,
    });
  });

  it('refuses a URL that is not http(s) and fields it does not know', () => {
    expect(agent([{ type: 'mcp', url: 'ftp://mcp.example.com/' }]).success).toBe(false);
    expect(agent([{ type: 'mcp', url: 'https://mcp.example.com/mcp', name: 'x' }]).success).toBe(false);
  });

  it('may sit beside tools of any name, several servers too: only named tools must be unique', () => {
    const parsed = agent([
      { type: 'mcp', url: 'https://a.example.com/mcp' },
      { type: 'mcp', url: 'https://b.example.com/mcp' },
      { type: 'end_call' },
    ]);
    expect(parsed.success).toBe(true);
  });

  it('keeps its headers write-only: hidden from responses, sealed like an HTTP tool’s', () => {
    const parsed = agent([{ type: 'mcp', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer k' } }]);
    expect(parsed.success).toBe(true);
    const shown = AGENT_SECRETS.hide(parsed.data);
    expect(shown?.tools[0]).toEqual({ type: 'mcp', url: 'https://mcp.example.com/mcp', timeout: 10 });
  });

  it('has its URL checked by the egress policy like every URL field: a loopback server is a 400 naming it', () => {
    const policy = new EgressPolicy([]);
    const config = agent([{ type: 'mcp', url: 'http://127.0.0.1:3001/mcp' }]).data;
    expect(() => refuseUrlFields(AGENT_URL_FIELDS, config, (url) => policy.literalRefusal(url))).toThrow(
      /body\.tools\.0\.url: http:\/\/127\.0\.0\.1:3001\/mcp is an internal address/,
    );
  });
});
