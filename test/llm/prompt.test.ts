import { describe, expect, it } from 'vitest';
import { fillVariables } from '../../src/llm/prompt.ts';

describe('prompt variables', () => {
  it('fills {{name}} placeholders from dynamic variables, spaces inside the braces allowed', () => {
    expect(
      fillVariables('Hi {{first_name}}, your order {{ order_id }} ships today.', {
        first_name: 'Ann',
        order_id: 'A-17',
      }),
    ).toBe('Hi Ann, your order A-17 ships today.');
  });

  it('leaves a placeholder without a value as written', () => {
    expect(fillVariables('Hi {{first_name}}.', {})).toBe('Hi {{first_name}}.');
  });

  it('does not read inherited object properties as variables', () => {
    expect(fillVariables('{{constructor}}', {})).toBe('{{constructor}}');
  });
});
