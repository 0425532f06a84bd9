// Fills `{{variable}}` placeholders of a system prompt or begin message from a call's
// dynamic_variables. A placeholder with no value stays as written, so a missing variable is
// visible in the transcript instead of silently becoming an empty string.

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

export function fillVariables(template: string, variables: Readonly<Record<string, string>>): string {
  if (!template.includes('{{')) return template;
  return template.replace(PLACEHOLDER, (whole, name: string) =>
    Object.hasOwn(variables, name) ? (variables[name] ?? whole) : whole,
  );
}
