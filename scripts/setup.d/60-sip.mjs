// SIP trunks: the tests call the SIP user agent with Debian's SIPp (sip-tester) and baresip, SIP
// software nobody here wrote; docs/sip-notes.md says how baresip is set up. Kamailio (its dispatcher, tm, rr, sl,
// maxfwd, textops, siputils, xlog, sanity and ipops modules are all in Debian's `kamailio` package) runs the
// proxy of deploy/kamailio/ in front of two nodes.
export const testApt = [
  ['sip-tester', 'SIPp places SIP calls against the user agent in the SIP tests'],
  ['baresip', 'the softphone that calls a trunk in the end-to-end SIP test (test/e2e/sip-call.test.ts)'],
  ['kamailio', 'the SIP proxy spreading calls over two nodes in test/e2e/sip-kamailio.test.ts (deploy/kamailio/)'],
];
