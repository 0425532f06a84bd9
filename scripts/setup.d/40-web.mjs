// Browser calls: the web-call page's end-to-end test drives a real browser.
// Debian's chromium only: nothing is downloaded by the test tooling (playwright-core fetches no browser).
export const testApt = [['chromium', 'real browser for the web-call end-to-end test']];
