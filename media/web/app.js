// The browser call page: pick an agent, call it through POST /v2/web-calls and the /media/web
// socket (protocol: src/transports/web/protocol.ts), talk, see the transcript and latency.
// Plain modern JavaScript, no build step; audio runs in two AudioWorklets. The Tests view is tests.js.

import { OpusLink, opusSupported } from './opus.js';
import { testsView } from './tests.js';

const KEY_STORAGE = 'voicecall.apiKey';
const AGENT_STORAGE = 'voicecall.agentId';
const FRAME_BYTES = 640;

const $ = (id) => document.getElementById(id);
const ui = {
  status: $('status'),
  keyForm: $('key-form'),
  keyInput: $('api-key'),
  forgetKey: $('forget-key'),
  callForm: $('call-form'),
  agent: $('agent'),
  call: $('call'),
  notice: $('notice'),
  live: $('live'),
  agentName: $('agent-name'),
  callId: $('call-id'),
  timer: $('timer'),
  micLevel: $('mic-level'),
  micBar: $('mic-bar'),
  speaking: $('speaking'),
  mute: $('mute'),
  hangup: $('hangup'),
  latencySummary: $('latency-summary'),
  latencyList: $('latency-list'),
  ended: $('ended'),
  transcript: $('transcript'),
  transcriptEmpty: $('transcript-empty'),
};

/** An error whose message is meant for the person at the page. */
class UiError extends Error {}

// ---------------------------------------------------------------- messages

function setStatus(text) {
  ui.status.textContent = text;
}

function notify(text, kind = 'error') {
  ui.notice.textContent = text;
  ui.notice.className = `notice ${kind}`;
  ui.notice.hidden = !text;
}

// The service's disconnection reasons (src/calls/record.ts), said plainly.
const REASONS = {
  user_hangup: 'You hung up',
  agent_hangup: 'The agent ended the call',
  call_transfer: 'The call was transferred',
  inactivity: 'The call ended after a long silence',
  max_duration_reached: 'The call reached its maximum length',
  concurrency_limit_reached: 'Too many calls at once; try again later',
  insufficient_balance: 'The organization has no credit left for calls',
  dial_no_answer: 'The call was never connected',
  dial_failed: 'The call could not be connected',
  error_service: 'The call failed on the service',
  flow_error: 'The agent’s call flow failed',
  connection_lost: 'The connection to the service was lost',
};

function describeReason(reason) {
  const text = REASONS[reason] ?? (reason.startsWith('error') ? 'The call failed on the service' : 'The call ended');
  return `${text} (${reason})`;
}

function describeApiError(status, body, what) {
  const details = body && typeof body === 'object' ? [body.error, body.details].filter(Boolean).join(': ') : '';
  if (status === 401) return 'The API key was refused. Check it and enter it again.';
  if (status === 429) return 'Too many requests right now; wait a few seconds and try again.';
  if (status === 503) return 'The service is restarting or shutting down; try again in a few seconds.';
  if (status === 404 && what === 'call') return `The call could not be started: ${details || 'not found'}.`;
  return `${what === 'call' ? 'The call could not be started' : 'The request failed'} (HTTP ${status})${details ? `: ${details}` : ''}.`;
}

async function request(method, path, body, what) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${sessionStorage.getItem(KEY_STORAGE) ?? ''}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new UiError('The service cannot be reached. It may be restarting; try again in a moment.');
  }
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new UiError(describeApiError(res.status, data, what));
  return data;
}

const api = (path, body, what) => request('POST', path, body ?? {}, what);

const tests = testsView({ request: (method, path, body) => request(method, path, body, 'tests'), agentId: () => ui.agent.value });

// ---------------------------------------------------------------- API key and agents

async function loadAgents() {
  ui.agent.disabled = true;
  ui.call.disabled = true;
  ui.agent.replaceChildren(new Option('Loading agents…', ''));
  try {
    const { agents } = await api('/v2/agents/list', {}, 'agents');
    if (!agents.length) {
      ui.agent.replaceChildren(new Option('No agents yet', ''));
      notify('This organization has no agents. Create one with POST /v2/agents.', 'info');
      return;
    }
    const wanted = new URLSearchParams(location.search).get('agent') ?? sessionStorage.getItem(AGENT_STORAGE);
    ui.agent.replaceChildren(
      ...agents.map((a) => {
        const option = new Option(a.agent_name ? `${a.agent_name} (${a.agent_id})` : a.agent_id, a.agent_id);
        option.selected = a.agent_id === wanted;
        return option;
      }),
    );
    ui.agent.disabled = false;
    ui.call.disabled = false;
    notify('');
    void tests.load();
  } catch (error) {
    ui.agent.replaceChildren(new Option('Enter an API key first', ''));
    notify(error instanceof UiError ? error.message : `Could not load agents: ${error.message}`);
    if (/refused/.test(error.message)) forgetKey(false);
  }
}

function forgetKey(clearNotice = true) {
  sessionStorage.removeItem(KEY_STORAGE);
  ui.keyInput.value = '';
  ui.forgetKey.hidden = true;
  ui.agent.disabled = true;
  ui.call.disabled = true;
  ui.agent.replaceChildren(new Option('Enter an API key first', ''));
  tests.hide();
  if (clearNotice) notify('');
}

ui.keyForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const key = ui.keyInput.value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_STORAGE, key);
  ui.forgetKey.hidden = false;
  void loadAgents();
});
ui.forgetKey.addEventListener('click', () => forgetKey());
ui.agent.addEventListener('change', () => void tests.load());

// ---------------------------------------------------------------- the call

function clock(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function microphoneMessage(error) {
  switch (error?.name) {
    case 'NotAllowedError':
    case 'SecurityError':
      return 'The microphone was refused. Allow microphone access for this page (the icon in the address bar) and press Call again.';
    case 'NotFoundError':
    case 'OverconstrainedError':
      return 'No microphone was found. Connect one and press Call again.';
    case 'NotReadableError':
      return 'The microphone is in use by another program or could not be started.';
    default:
      return `The microphone could not be opened: ${error?.message ?? error}`;
  }
}

class Call {
  constructor(agentId) {
    this.agentId = agentId;
    this.ws = null;
    this.started = false; // `start` sent: audio may flow
    this.ended = false;
    this.muted = false;
    this.startedAt = 0;
    this.entries = new Map(); // "role:turn" → transcript <li>
    this.latencies = [];
    this.timer = 0;
  }

  async start() {
    // Safari and Chrome only let audio start inside the click: make the context first.
    const Context = window.AudioContext ?? window.webkitAudioContext;
    if (!Context || !window.AudioWorkletNode) throw new UiError('This browser cannot do calls (no AudioWorklet). Use a current Chrome, Firefox or Safari.');
    this.ctx = new Context({ latencyHint: 'interactive' });
    void this.ctx.resume();
    if (!navigator.mediaDevices?.getUserMedia) throw new UiError('The microphone is only available on https:// pages (or http://localhost).');

    setStatus('Asking for the microphone…');
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true, channelCount: 1 },
      });
    } catch (error) {
      throw new UiError(microphoneMessage(error));
    }
    if (this.ended) return;

    await Promise.all([this.ctx.audioWorklet.addModule('/web/capture-worklet.js'), this.ctx.audioWorklet.addModule('/web/playback-worklet.js')]);
    this.capture = new AudioWorkletNode(this.ctx, 'capture', { numberOfInputs: 1, numberOfOutputs: 1, channelCount: 1, channelCountMode: 'explicit' });
    this.playback = new AudioWorkletNode(this.ctx, 'playback', { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
    this.source = this.ctx.createMediaStreamSource(this.stream);
    // The capture node must be pulled by the graph to run; a silent gain keeps the mic out of the speakers.
    this.sink = this.ctx.createGain();
    this.sink.gain.value = 0;
    this.source.connect(this.capture).connect(this.sink).connect(this.ctx.destination);
    this.playback.connect(this.ctx.destination);
    this.capture.port.onmessage = (event) => this.onFrame(event.data);
    this.playback.port.onmessage = (event) => {
      if (event.data.type === 'mark') this.send({ type: 'mark', name: event.data.name });
    };

    setStatus('Starting the call…');
    const created = await api('/v2/web-calls', { agent_id: this.agentId }, 'call');
    if (this.ended) return;
    this.callId = created.call_id;
    ui.callId.textContent = created.call_id;
    // Opus both ways where the service and this browser both can (?codec=pcm keeps PCM).
    const wantsPcm = new URLSearchParams(location.search).get('codec') === 'pcm';
    const codec = !wantsPcm && created.codecs?.includes('opus') && (await opusSupported()) ? 'opus' : 'pcm';
    if (this.ended) return;
    this.open(created.websocket_url, created.access_token, codec);
  }

  open(websocketUrl, token, codec) {
    const url = new URL(websocketUrl, location.href);
    if (url.protocol === 'http:') url.protocol = 'ws:';
    if (url.protocol === 'https:') url.protocol = 'wss:';
    setStatus('Connecting…');
    const ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    if (codec === 'opus') {
      this.opus = new OpusLink(
        (packet) => {
          if (this.started && ws.readyState === WebSocket.OPEN) ws.send(packet);
        },
        (message, transfer) => this.playback.port.postMessage(message, transfer ?? []),
        (error) => notify(`Opus audio failed in this browser (${error.message}); reload with ?codec=pcm.`),
      );
    }
    ws.onopen = () => {
      // PCM is the protocol's default: the start names a codec only to ask for Opus.
      ws.send(JSON.stringify({ type: 'start', access_token: token, ...(codec === 'opus' ? { codec } : {}) }));
      this.started = true;
      setStatus('Connected, waiting for the agent…');
    };
    ws.onmessage = (event) => {
      if (typeof event.data === 'string') this.onMessage(event.data);
      else if (this.opus) this.opus.decode(event.data);
      else if (event.data.byteLength > 0) this.playback.port.postMessage({ type: 'audio', pcm: event.data }, [event.data]);
    };
    ws.onclose = (event) => {
      const opened = this.started;
      this.started = false;
      if (this.ended) return;
      void this.lost(event, opened, url);
    };
  }

  send(message) {
    if (this.started && this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  onFrame({ pcm, level }) {
    // 50 level updates a second; the bar's CSS transition smooths them.
    const percent = Math.min(100, Math.round(Math.sqrt(level) * 180));
    ui.micBar.style.width = `${percent}%`;
    ui.micLevel.setAttribute('aria-valuenow', String(percent));
    if (percent > Number(ui.micLevel.dataset.peak)) ui.micLevel.dataset.peak = String(percent);
    if (!this.started || this.ws.readyState !== WebSocket.OPEN || pcm.byteLength !== FRAME_BYTES) return;
    if (this.opus) this.opus.encode(pcm);
    else this.ws.send(pcm);
  }

  onMessage(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    switch (msg.type) {
      case 'call_started':
        this.startedAt = performance.now();
        this.callId = msg.call_id;
        ui.callId.textContent = msg.call_id;
        ui.agentName.textContent = msg.agent_name;
        document.body.dataset.callState = 'live';
        document.body.dataset.codec = msg.codec ?? 'pcm';
        setStatus('In call');
        this.timer = setInterval(() => (ui.timer.textContent = clock(performance.now() - this.startedAt)), 250);
        break;
      case 'transcript':
        this.showTranscript(msg);
        break;
      case 'tool_call':
        this.showTool(msg);
        break;
      case 'tool_result':
        this.showToolResult(msg);
        break;
      case 'agent_speaking':
        ui.speaking.hidden = false;
        // An utterance's text arrives once it has been spoken: label it with when it began.
        this.agentSpeakingSince ??= this.since();
        break;
      case 'agent_stopped':
        ui.speaking.hidden = true;
        break;
      case 'latency':
        this.showLatency(msg);
        break;
      case 'mark':
        if (this.opus) this.opus.mark(msg.name);
        else this.playback.port.postMessage({ type: 'mark', name: msg.name });
        break;
      case 'clear':
        if (this.opus) this.opus.clear();
        else this.playback.port.postMessage({ type: 'clear' });
        break;
      case 'call_ended':
        this.finish(describeReason(msg.disconnection_reason), msg.disconnection_reason);
        break;
      case 'error':
        this.lastError = `${msg.message} (${msg.code})`;
        notify(`The service reported an error: ${this.lastError}`);
        break;
      default:
        break;
    }
  }

  since() {
    return this.startedAt ? clock(performance.now() - this.startedAt) : '0:00';
  }

  item(className, who, when = this.since()) {
    const li = document.createElement('li');
    li.className = className;
    const label = document.createElement('span');
    label.className = 'who';
    label.textContent = `${who} · ${when}`;
    li.append(label);
    ui.transcriptEmpty.hidden = true;
    ui.transcript.append(li);
    ui.transcript.scrollTop = ui.transcript.scrollHeight;
    return li;
  }

  /**
   * User text: partials then the final text of a turn, in one entry. Agent text comes one
   * spoken utterance at a time (each final): they join into one entry per turn unless
   * something else (a tool call, the caller) came in between.
   */
  showTranscript({ role, text, final, turn }) {
    const last = ui.transcript.lastElementChild;
    let li = role === 'user' ? this.entries.get(`user:${turn}`) : undefined;
    if (role === 'agent' && last?.dataset.role === 'agent' && last.dataset.turn === String(turn)) {
      li = last;
      const span = li.querySelector('.text');
      // An utterance after a finished one adds to it; a partial one is replaced.
      if (!li.classList.contains('partial') && span.textContent) text = `${span.textContent} ${text}`;
    }
    if (!li) {
      li = role === 'user' ? this.item('user', 'You') : this.item('agent', 'Agent', this.agentSpeakingSince ?? this.since());
      if (role === 'agent') this.agentSpeakingSince = undefined;
      const span = document.createElement('span');
      span.className = 'text';
      li.append(span);
      li.dataset.role = role;
      li.dataset.turn = String(turn);
      if (!this.entries.has(`${role}:${turn}`)) this.entries.set(`${role}:${turn}`, li);
      const pending = this.latencies.find((l) => l.turn === turn);
      if (role === 'agent' && pending && this.entries.get(`agent:${turn}`) === li) this.badge(li, pending.e2e_ms);
    }
    li.querySelector('.text').textContent = text;
    li.classList.toggle('partial', !final);
    ui.transcript.scrollTop = ui.transcript.scrollHeight;
  }

  showTool({ name, arguments: args }) {
    const li = this.item('tool', 'Tool call');
    li.dataset.tool = name;
    const call = document.createElement('div');
    call.textContent = `${name}(${args.length > 300 ? `${args.slice(0, 300)}…` : args})`;
    const result = document.createElement('div');
    result.className = 'result';
    result.textContent = '…';
    li.append(call, result);
  }

  showToolResult({ name, successful, content }) {
    const open = [...ui.transcript.querySelectorAll('li.tool')].reverse().find((li) => li.dataset.tool === name && !li.dataset.done);
    const li = open ?? this.item('tool', 'Tool result');
    li.dataset.done = '1';
    li.classList.add(successful ? 'ok' : 'failed');
    let result = li.querySelector('.result');
    if (!result) {
      result = document.createElement('div');
      result.className = 'result';
      li.append(result);
    }
    result.textContent = `${successful ? '✓' : '✗'} ${content.length > 300 ? `${content.slice(0, 300)}…` : content}`;
  }

  badge(li, ms) {
    const lat = li.querySelector('.lat') ?? li.querySelector('.who').appendChild(document.createElement('span'));
    lat.className = 'lat';
    lat.textContent = `${Math.round(ms)} ms`;
  }

  showLatency({ turn, e2e_ms }) {
    this.latencies.push({ turn, e2e_ms });
    const li = document.createElement('li');
    li.textContent = `turn ${turn}: ${Math.round(e2e_ms)} ms`;
    ui.latencyList.append(li);
    const values = this.latencies.map((l) => l.e2e_ms);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    ui.latencySummary.textContent = `last ${Math.round(e2e_ms)} ms · average ${Math.round(mean)} ms · ${values.length} turn${values.length === 1 ? '' : 's'}`;
    const agentLi = this.entries.get(`agent:${turn}`);
    if (agentLi) this.badge(agentLi, e2e_ms);
  }

  setMuted(muted) {
    this.muted = muted;
    this.capture?.port.postMessage({ type: 'mute', value: muted });
    ui.mute.setAttribute('aria-pressed', String(muted));
    ui.mute.textContent = muted ? 'Unmute' : 'Mute';
    document.body.classList.toggle('muted', muted);
  }

  /** Asks the service to end the call; it answers with call_ended (user_hangup). */
  hangup() {
    if (this.ended) return;
    ui.hangup.disabled = true;
    setStatus('Hanging up…');
    if (this.started && this.ws.readyState === WebSocket.OPEN) {
      this.send({ type: 'hangup' });
      // Should the answer not come, end here anyway.
      this.hangupTimer = setTimeout(() => this.finish(describeReason('user_hangup'), 'user_hangup'), 3000);
    } else {
      this.finish('Call cancelled', 'user_hangup');
    }
  }

  async lost(event, opened, url) {
    let text;
    if (this.lastError) text = `The service refused the call: ${this.lastError}.`;
    else if (!opened) text = `Could not connect to the call stream at ${url.host}. The service may be down or restarting; try again in a moment.`;
    else if (event.code === 1001 || event.code === 1012 || event.code === 1013) text = 'The service is restarting or shutting down, so the call ended. Press Call to start a new one once it is back.';
    else text = `The connection to the service was lost (code ${event.code}${event.reason ? `: ${event.reason}` : ''}), so the call ended.`;
    this.finish(text, 'connection_lost', true);
    // Tell a restart from a network drop: is the service there at all?
    try {
      const res = await fetch('/healthz', { cache: 'no-store' });
      if (!res.ok) throw new Error(String(res.status));
    } catch {
      notify(`${text} The service is not answering right now — it may be restarting. Press Call to try again once it is back.`);
    }
  }

  finish(text, reason, isError = false) {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.hangupTimer);
    clearInterval(this.timer);
    this.started = false;
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close(1000, 'call ended');
    this.opus?.close();
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    void this.ctx?.close().catch(() => undefined);
    document.body.dataset.callState = 'ended';
    document.body.dataset.disconnectionReason = reason;
    document.body.classList.remove('muted');
    ui.speaking.hidden = true;
    ui.hangup.disabled = true;
    ui.mute.disabled = true;
    ui.micBar.style.width = '0%';
    ui.ended.textContent = `Call ended: ${text}`;
    ui.ended.hidden = false;
    if (isError) notify(text);
    setStatus('Call ended');
    ui.call.disabled = false;
    ui.agent.disabled = false;
    if (current === this) current = null;
  }
}

let current = null;

function resetCallView() {
  ui.transcript.replaceChildren();
  ui.transcriptEmpty.hidden = false;
  ui.latencyList.replaceChildren();
  ui.latencySummary.textContent = 'No turn yet';
  ui.timer.textContent = '0:00';
  ui.callId.textContent = '';
  ui.agentName.textContent = ui.agent.selectedOptions[0]?.textContent ?? '';
  ui.ended.hidden = true;
  ui.micLevel.dataset.peak = '0';
  ui.mute.disabled = false;
  ui.hangup.disabled = false;
  ui.mute.setAttribute('aria-pressed', 'false');
  ui.mute.textContent = 'Mute';
  ui.speaking.hidden = true;
  delete document.body.dataset.disconnectionReason;
}

ui.callForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const agentId = ui.agent.value;
  if (!agentId || current) return;
  sessionStorage.setItem(AGENT_STORAGE, agentId);
  notify('');
  resetCallView();
  ui.live.hidden = false;
  ui.call.disabled = true;
  ui.agent.disabled = true;
  document.body.dataset.callState = 'connecting';
  const call = new Call(agentId);
  current = call;
  call.start().catch((error) => {
    const text = error instanceof UiError ? error.message : `The call could not be started: ${error.message}`;
    call.finish(text, 'not_started', true);
  });
});

ui.mute.addEventListener('click', () => current?.setMuted(!current.muted));
ui.hangup.addEventListener('click', () => current?.hangup());
// Keys go to the agent as keypad digits (DTMF), from the buttons or the keyboard outside a field.
const KEYPAD_KEYS = '0123456789*#';
document.getElementById('keypad').addEventListener('click', (event) => {
  const key = event.target instanceof HTMLElement ? event.target.dataset.key : undefined;
  if (key) current?.send({ type: 'dtmf', digit: key });
});
document.addEventListener('keydown', (event) => {
  if (!current || event.repeat || event.ctrlKey || event.metaKey || event.altKey || !KEYPAD_KEYS.includes(event.key) || event.key === '') return;
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
  current.send({ type: 'dtmf', digit: event.key });
});
// Closing the tab ends the call for the service too, instead of waiting for a timeout.
window.addEventListener('pagehide', () => current?.send({ type: 'hangup' }));

if (sessionStorage.getItem(KEY_STORAGE)) {
  ui.keyInput.value = sessionStorage.getItem(KEY_STORAGE);
  ui.forgetKey.hidden = false;
  void loadAgents();
}
