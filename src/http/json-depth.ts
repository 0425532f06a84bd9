// How deeply a JSON text nests, found before it is parsed: a body nested thousands of levels deep
// would otherwise overflow the stack of whatever walks it later (a 500 instead of a 400).

export const MAX_JSON_DEPTH = 64;

/** The path (body.a.b[]…) of the first value nested deeper than `limit`, or null when none is. */
export function tooDeep(text: string, limit: number = MAX_JSON_DEPTH): string | null {
  /** How each open container is reached from its parent: a key, '[]' in an array, '' at the top. */
  const names: string[] = [];
  const isArray: boolean[] = [];
  let lastString = '';
  let inString = false;
  let escaped = false;
  let stringStart = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) {
        inString = false;
        lastString = text.slice(stringStart, i);
      }
    } else if (c === 0x22) {
      inString = true;
      stringStart = i + 1;
    } else if (c === 0x7b || c === 0x5b) {
      // In an object the string just before a nested value is its key.
      names.push(names.length === 0 ? '' : isArray[isArray.length - 1] ? '[]' : lastString);
      isArray.push(c === 0x5b);
      if (names.length > limit) return describe(names);
    } else if (c === 0x7d || c === 0x5d) {
      names.pop();
      isArray.pop();
    }
  }
  return null;
}

function describe(names: readonly string[]): string {
  const shown = names.slice(1, 7).map((name) => (name === '[]' ? '[]' : `.${name}`));
  return `body${shown.join('')}${names.length > 7 ? '…' : ''}`;
}
