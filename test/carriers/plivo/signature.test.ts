// X-Plivo-Signature-V3 as Plivo documents it (src/carriers/plivo/signature.ts): what text is
// signed for GET and POST, with and without a query, and which signatures pass.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isValidPlivoSignature, plivoSignatureV3, plivoSignedText } from '../../../src/carriers/plivo/signature.ts';

const TOKEN = 'MjAxOTRiZDg4Y2E0ZWY1NjQ0NGI2NjU4ZGZiZGY1';
const URL_ = 'https://agents.example.com/telephony/plivo/voice';

describe('Plivo V3 signed text', () => {
  it('a POST without a query is the URL, "?", then each parameter name+value in name order', () => {
    expect(plivoSignedText('POST', URL_, { To: '14155550100', CallUUID: 'abc', From: '1415' })).toBe(
      `${URL_}?CallUUIDabcFrom1415To14155550100`,
    );
  });

  it('a POST with a query puts the sorted query, then ".", before the parameters', () => {
    expect(plivoSignedText('POST', `${URL_}?secret=s&call_id=c`, { CallStatus: 'completed' })).toBe(
      `${URL_}?call_id=c&secret=s.CallStatuscompleted`,
    );
  });

  it('a parameter given more than once signs its values in order; a bare URL signs as it is', () => {
    expect(plivoSignedText('POST', URL_, { Digits: ['2', '1'] })).toBe(`${URL_}?Digits1Digits2`);
    expect(plivoSignedText('POST', URL_, {})).toBe(URL_);
  });

  it('a GET signs the URL and its sorted query, the parameters being in the query', () => {
    expect(plivoSignedText('GET', `${URL_}?To=1415&CallUUID=abc`)).toBe(`${URL_}?CallUUID=abc&To=1415`);
    expect(plivoSignedText('GET', URL_)).toBe(URL_);
  });

  it('the signature is base64 HMAC-SHA256 of the signed text, ".", and the nonce', () => {
    const params = { CallUUID: 'abc' };
    const expected = createHmac('sha256', TOKEN).update(`${URL_}?CallUUIDabc.12345`).digest('base64');
    expect(plivoSignatureV3(TOKEN, 'POST', URL_, params, '12345')).toBe(expected);
  });
});

describe('Plivo V3 signature check', () => {
  const params = { CallUUID: 'abc', To: '14155550100' };
  const signature = plivoSignatureV3(TOKEN, 'POST', URL_, params, 'n1');
  const request = { method: 'POST' as const, url: URL_, params, signature, nonce: 'n1' };

  it('passes the account token’s signature, alone or among comma-separated others', () => {
    expect(isValidPlivoSignature(TOKEN, request)).toBe(true);
    expect(isValidPlivoSignature(TOKEN, { ...request, signature: `bm90IGl0,${signature}` })).toBe(true);
  });

  it('refuses another token, another nonce, a changed parameter or URL, and a missing header', () => {
    expect(isValidPlivoSignature('another-token-entirely', request)).toBe(false);
    expect(isValidPlivoSignature(TOKEN, { ...request, nonce: 'n2' })).toBe(false);
    expect(isValidPlivoSignature(TOKEN, { ...request, params: { ...params, To: '14155550199' } })).toBe(false);
    expect(isValidPlivoSignature(TOKEN, { ...request, url: `${URL_}?call_id=x` })).toBe(false);
    expect(isValidPlivoSignature(TOKEN, { ...request, signature: undefined })).toBe(false);
    expect(isValidPlivoSignature(TOKEN, { ...request, nonce: undefined })).toBe(false);
  });
});
