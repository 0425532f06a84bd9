import { describe, expect, it } from 'vitest';
import { isValidTwilioSignature, twilioSignature } from '../../../src/carriers/twilio/signature.ts';

const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const params = {
  CallSid: 'CA1234567890ABCDE',
  Caller: '+12349013030',
  Digits: '1234',
  From: '+12349013030',
  To: '+18005551212',
};

describe('X-Twilio-Signature', () => {
  it('matches the published test vector', () => {
    expect(twilioSignature('12345', url, params)).toBe('0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
    expect(isValidTwilioSignature('12345', url, params, '0/KCTR6DLpKmkAf8muzZqo1nDgQ=')).toBe(true);
  });

  it('accepts the URL with the default port added, as Twilio may sign either', () => {
    const withPort = twilioSignature('12345', 'https://mycompany.com:443/myapp.php?foo=1&bar=2', params);
    expect(isValidTwilioSignature('12345', url, params, withPort)).toBe(true);
  });

  it('refuses a changed parameter, a wrong token and a missing header', () => {
    expect(
      isValidTwilioSignature('12345', url, { ...params, To: '+18005551213' }, '0/KCTR6DLpKmkAf8muzZqo1nDgQ='),
    ).toBe(false);
    expect(isValidTwilioSignature('54321', url, params, '0/KCTR6DLpKmkAf8muzZqo1nDgQ=')).toBe(false);
    expect(isValidTwilioSignature('12345', url, params, undefined)).toBe(false);
  });
});
