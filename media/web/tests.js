// The page's Tests view: the selected agent's tests, a run of them against a version (watched as
// each test ends), its results with the assertions that failed, and what changed against the
// previous version's last run. API: /v2/agents/{id}/tests/list, /test-runs, /v2/test-runs/{id}[/diff].

const POLL_MS = 1000;
const $ = (id) => document.getElementById(id);

const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  Object.assign(node, props);
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== ''));
  return node;
};

const seconds = (ms) => (ms === null || ms === undefined ? '' : `${(ms / 1000).toFixed(1)} s`);

function callerKind(caller) {
  if (caller.script) return `script, ${caller.script.length} step${caller.script.length === 1 ? '' : 's'}`;
  if (caller.persona) return 'simulated caller';
  if (caller.replay) return `replay of ${caller.replay.call_id}`;
  return '';
}

/**
 * request(method, path, body) → parsed JSON or throws an Error whose message is for the person;
 * agentId() → the agent selected on the page.
 */
export function testsView({ request, agentId }) {
  const ui = {
    view: $('tests-view'),
    empty: $('tests-empty'),
    list: $('test-list'),
    form: $('run-form'),
    version: $('run-version'),
    run: $('run-tests'),
    runView: $('run-view'),
    summary: $('run-summary'),
    results: $('run-results'),
    diff: $('run-diff'),
    history: $('run-history'),
  };
  let watching = 0; // the run being polled; a newer one stops the older poll

  function showResults(run) {
    ui.runView.hidden = false;
    const s = run.summary;
    ui.summary.textContent =
      run.status === 'running'
        ? `Running ${s.total} test${s.total === 1 ? '' : 's'} on version ${run.agent_version}… ${s.passed + s.failed + s.errored} done`
        : `Version ${run.agent_version}: ${s.passed} passed, ${s.failed} failed, ${s.errored} errors — ${seconds(s.wall_ms)} for ${seconds(s.audio_ms)} of calls`;
    ui.summary.dataset.status = run.status;
    ui.results.replaceChildren(
      ...run.results.map((r) => {
        const meta = [seconds(r.duration_ms), r.latency_e2e_ms ? `p50 ${Math.round(r.latency_e2e_ms.p50)} ms` : '', r.call_id ?? ''].filter(Boolean).join(' · ');
        const item = el('li', { className: `result ${r.status}` }, el('span', { className: `badge ${r.status}`, textContent: r.status }), r.name, el('span', { className: 'meta', textContent: meta }));
        item.dataset.testId = r.test_id;
        for (const a of r.assertions.filter((x) => !x.passed)) item.append(el('div', { className: 'why', textContent: `${a.assertion}: ${a.details}` }));
        if (r.error) item.append(el('div', { className: 'why', textContent: r.error }));
        const said = (r.transcript_with_tool_calls ?? []).map((i) =>
          el('li', { textContent: i.role === 'tool_call_invocation' ? `tool call: ${i.name}(${i.arguments})` : i.role === 'tool_call_result' ? `tool result: ${i.content.slice(0, 200)}` : `${i.role}: ${i.content}` }),
        );
        if (said.length > 0) item.append(el('details', {}, el('summary', { textContent: 'Transcript' }), el('ol', {}, ...said)));
        return item;
      }),
    );
  }

  function showDiff(diff) {
    const lines = diff.tests.flatMap((t) => {
      const notes = [
        t.status.changed ? `${t.status.before ?? 'not run'} → ${t.status.after ?? 'not run'}` : '',
        ...t.tool_calls.removed.map((c) => `no longer calls ${c.name}`),
        ...t.tool_calls.added.map((c) => `now calls ${c.name}`),
        ...t.tool_calls.changed.map((c) => `calls ${c.name} with ${c.after} instead of ${c.before}`),
        t.turns.length ? (t.turns.length === 1 ? '1 turn differs' : `${t.turns.length} turns differ`) : '',
        t.latency_e2e_p50_ms.change !== null ? `p50 ${t.latency_e2e_p50_ms.change >= 0 ? '+' : ''}${t.latency_e2e_p50_ms.change} ms` : '',
      ].filter(Boolean);
      return notes.length ? [el('li', { textContent: `${t.name}: ${notes.join('; ')}` })] : [];
    });
    const s = diff.summary;
    ui.diff.replaceChildren(
      el('div', { className: 'small', textContent: `Against version ${diff.against_agent_version} (run ${diff.against}): ${s.newly_failing} newly failing, ${s.newly_passing} newly passing, ${s.changed} changed` }),
      lines.length ? el('ul', {}, ...lines) : el('div', { className: 'muted small', textContent: 'Nothing changed.' }),
    );
  }

  async function loadDiff(run) {
    try {
      showDiff(await request('GET', `/v2/test-runs/${run.run_id}/diff`));
    } catch (error) {
      ui.diff.replaceChildren(el('div', { className: 'muted small', textContent: /no finished run/.test(error.message) ? 'No run of an earlier version to compare with.' : error.message }));
    }
  }

  async function watch(run) {
    const id = ++watching;
    ui.diff.replaceChildren();
    showResults(run);
    while (run.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      if (id !== watching) return;
      run = await request('GET', `/v2/test-runs/${run.run_id}`);
      showResults(run);
    }
    ui.run.disabled = false;
    await loadDiff(run);
    void loadHistory();
  }

  async function loadHistory() {
    const { test_runs: runs } = await request('POST', `/v2/agents/${encodeURIComponent(agentId())}/test-runs/list`, { limit: 10 });
    ui.history.replaceChildren(
      ...runs.map((run) => {
        const open = el('button', { type: 'button', className: 'link', textContent: `${new Date(run.created_at).toLocaleString()} — version ${run.agent_version}: ${run.status}` });
        open.addEventListener('click', () => void watch(run).catch(fail));
        return el('li', {}, open);
      }),
    );
  }

  function fail(error) {
    ui.run.disabled = false;
    ui.runView.hidden = false;
    ui.summary.textContent = error.message;
    ui.summary.dataset.status = 'error';
  }

  ui.form.addEventListener('submit', (event) => {
    event.preventDefault();
    const raw = ui.version.value.trim() || 'production';
    const version = /^\d+$/.test(raw) ? Number(raw) : raw;
    ui.run.disabled = true;
    request('POST', `/v2/agents/${encodeURIComponent(agentId())}/test-runs`, { agent_version: version })
      .then((run) => watch(run))
      .catch(fail);
  });

  return {
    /** Shows the selected agent's tests (after the key was given or another agent picked). */
    async load() {
      watching++;
      ui.view.hidden = false;
      ui.runView.hidden = true;
      ui.run.disabled = false;
      try {
        const { tests } = await request('POST', `/v2/agents/${encodeURIComponent(agentId())}/tests/list`, {});
        ui.empty.hidden = tests.length > 0;
        ui.run.disabled = tests.length === 0;
        ui.list.replaceChildren(...tests.map((t) => el('li', {}, t.name, el('span', { className: 'kind', textContent: callerKind(t.caller) }))));
        await loadHistory();
      } catch (error) {
        fail(error);
      }
    },
    hide() {
      watching++;
      ui.view.hidden = true;
    },
  };
}
