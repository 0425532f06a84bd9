// SIP trunks: the tests call the SIP user agent with Debian's SIPp (sip-tester), SIP software
// nobody here wrote; docs/sip-notes.md says how baresip (the softphone the end-to-end test
// will use) was set up.
export const testApt = [['sip-tester', 'SIPp places SIP calls against the user agent in the SIP tests']];
