// SIP trunks: the tests call the SIP user agent with Debian's SIPp (sip-tester) and baresip, SIP
// software nobody here wrote; docs/sip-notes.md says how baresip is set up.
export const testApt = [
  ['sip-tester', 'SIPp places SIP calls against the user agent in the SIP tests'],
  ['baresip', 'the softphone that calls a trunk in the end-to-end SIP test (test/e2e/sip-call.test.ts)'],
];
