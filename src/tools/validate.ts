// Checks a tool call's arguments against the tool's OpenAPI 3.0 object schema. Ajv knows
// `nullable`; other OpenAPI-only keywords (example, format names like int32, x-*) are ignored
// rather than rejected, since they say nothing about validity here.
import { Ajv, type ErrorObject } from 'ajv';

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, logger: false });

export type ArgumentsCheck = { ok: true; args: Record<string, unknown> } | { ok: false; error: string };

export type ArgumentsValidator = (argumentsText: string) => ArgumentsCheck;

/**
 * `uncompiled`: what a schema that cannot be compiled means — every call refused (an agent's own tool: its author
 * fixes it), or only JSON objects checked (an MCP server's: the server checks its own arguments).
 */
export function compileArgumentsValidator(
  parameters: Record<string, unknown>,
  uncompiled: 'refuse' | 'objects' = 'refuse',
): ArgumentsValidator {
  let validate: ((value: unknown) => boolean) & { errors?: ErrorObject[] | null | undefined };
  try {
    validate = ajv.compile(parameters);
  } catch (err) {
    const reason = `the tool's parameters schema is invalid: ${err instanceof Error ? err.message : String(err)}`;
    if (uncompiled === 'refuse') return () => ({ ok: false, error: reason });
    validate = () => true;
  }
  return (text) => {
    let value: unknown;
    try {
      // Models send "" for a tool without parameters.
      value = text.trim() === '' ? {} : JSON.parse(text);
    } catch {
      return { ok: false, error: 'arguments are not valid JSON' };
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { ok: false, error: 'arguments must be a JSON object' };
    }
    if (!validate(value)) {
      const issues = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
      return { ok: false, error: issues.join('; ') };
    }
    return { ok: true, args: value as Record<string, unknown> };
  };
}
