// moat's web console.  Every string that comes from a guest (names,
// destinations, reasons) is put on the page as text (textContent), never
// as markup.  Every change goes to /api/... with the session's CSRF token
// in a header; the gateway checks it, and the user's rights, again.
'use strict';

const state = { csrf: '', user: '', admin: false, refused: [], audit: [], auditLive: false, auditError: '' };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') e.textContent = v;
    else if (k === 'on') e.addEventListener('click', v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

function cell(label, text, cls) {
  const a = { 'data-label': label, text: text == null ? '' : String(text) };
  if (cls) a.class = cls;
  return el('td', a);
}

function notice(text, bad) {
  const n = document.getElementById('notice');
  n.textContent = text;
  n.className = bad ? 'bad' : '';
}

function bytes(n) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}

async function get(path) {
  const r = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
  const t = await r.text();
  if (r.status === 401) {
    notice('Not logged in. Run "gatewayd ctl web-login" on the gateway and open the link it prints.', true);
    throw new Error('401');
  }
  if (!r.ok) throw new Error(t.trim());
  return t;
}

async function post(path, fields) {
  const r = await fetch(path, {
    method: 'POST', credentials: 'same-origin', cache: 'no-store',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRF-Token': state.csrf },
    body: new URLSearchParams(fields).toString(),
  });
  const t = (await r.text()).trim();
  notice(t, !r.ok);
  return r.ok;
}

// --- sandboxes ---------------------------------------------------------
// Traffic over the last hour, sampled here while the console is open.
const history = new Map();
const HOUR = 3600 * 1000;

function sample(list) {
  const now = Date.now();
  for (const s of list) {
    const h = history.get(s.name) || [];
    h.push({ t: now, b: s.bytes_in + s.bytes_out });
    while (h.length && h[0].t < now - HOUR) h.shift();
    history.set(s.name, h);
  }
}

// A sparkline of bytes a second, drawn as SVG elements (no markup).
function chart(name) {
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', '0 0 120 24');
  svg.setAttribute('class', 'spark');
  const h = history.get(name) || [];
  const rates = [];
  for (let i = 1; i < h.length; i++) {
    rates.push({ t: h[i].t, r: Math.max(0, h[i].b - h[i - 1].b) / Math.max(1, (h[i].t - h[i - 1].t) / 1000) });
  }
  const max = Math.max(1, ...rates.map((x) => x.r));
  const now = Date.now();
  const pts = rates.map((x) => ((120 * (x.t - (now - HOUR))) / HOUR).toFixed(1) + ',' + (23 - (22 * x.r) / max).toFixed(1));
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute('points', pts.join(' '));
  svg.append(line);
  const title = document.createElementNS(NS, 'title');
  title.textContent = 'last hour, peak ' + bytes(max) + '/s';
  svg.append(title);
  return svg;
}

// The guest's own last containment verdict and its age (its scheduled
// re-check), and a quarantine.
function verdictText(s) {
  let v = s.verdict ? s.verdict + ', ' + age(s.verdict_age) + ' ago' : 'no verdict yet';
  if (s.quarantined) v += ', QUARANTINED';
  return v;
}

function age(secs) {
  if (secs == null) return '?';
  if (secs < 120) return secs + 's';
  if (secs < 7200) return Math.round(secs / 60) + 'm';
  if (secs < 172800) return Math.round(secs / 3600) + 'h';
  return Math.round(secs / 86400) + 'd';
}

async function loadSandboxes() {
  const list = JSON.parse(await get('/api/sandboxes'));
  sample(list);
  return list;
}

async function showSandboxes() {
  const list = await loadSandboxes();
  const body = document.getElementById('sandboxes-rows');
  body.replaceChildren(...list.map((s) => el('tr', { 'data-sandbox': s.name },
    cell('name', s.name, 'name'), cell('egress', s.egress),
    cell('owner', s.owner || '-'), cell('address', s.address),
    cell('in', bytes(s.bytes_in)), cell('out', bytes(s.bytes_out)),
    cell('connections', s.conns_out),
    cell('live connections', s.connections_live == null ? '?' : s.connections_live, 'conns-live'),
    cell('budget', s.egress_budget ? bytes(s.egress_spent) + ' of ' + bytes(s.egress_budget) : '-'),
    cell('containment', verdictText(s)),
    el('td', { 'data-label': 'last hour' }, chart(s.name)))));
  if (!list.length) body.replaceChildren(el('tr', {}, el('td', { colspan: 11, class: 'muted', text: 'No sandbox of yours.' })));
}

// --- refused -----------------------------------------------------------
async function allow(sandbox, name, dur, ports) {
  const f = { sandbox, name, for: dur };
  if (ports) f.ports = ports;
  if (await post('/api/allow', f)) showGrants().catch(() => {});
}

function portsDialog(sandbox, name) {
  const d = document.getElementById('ports-dialog');
  document.getElementById('ports-name').textContent = name;
  d.onclose = () => {
    if (d.returnValue === 'ok') allow(sandbox, name, '1h', document.getElementById('ports-input').value.trim());
  };
  d.showModal();
}

// What no grant can open: the containment scan's probes (and anything
// else aimed at private ranges, the gateway, other guests or other
// resolvers) are folded into one line per sandbox.
const NEVER = new Set(['private address', 'the gateway host', 'another guest',
  'a resolver other than the gateway']);

function refusedRow(g, e) {
  const name = e.destination;
  const b = (label, dur, cls) => el('button', {
    class: cls || '', text: label, on: () => allow(g.sandbox, name, dur),
  });
  return el('tr', { 'data-sandbox': g.sandbox, 'data-name': name },
    cell('name', e.what, 'name'), cell('count', e.count),
    cell('last', e.last), cell('why', e.source + ' ' + e.reason),
    el('td', { class: 'actions' },
      b('allow 1 h', '1h', 'primary allow-1h'), b('a day', '1d', 'allow-1d'),
      b('for good', 'ever', 'allow-ever'),
      el('button', { text: 'ports…', class: 'allow-ports', on: () => portsDialog(g.sandbox, name) })));
}

function renderRefused() {
  const box = document.getElementById('refused-groups');
  const groups = state.refused.filter((g) => g.entries.length);
  if (!groups.length) {
    box.replaceChildren(el('p', { class: 'muted', text: 'Nothing refused lately.' }));
    return;
  }
  box.replaceChildren(...groups.map((g) => {
    const open = g.entries.filter((e) => !NEVER.has(e.reason));
    const never = g.entries.filter((e) => NEVER.has(e.reason));
    const parts = [el('h3', { text: g.sandbox }),
      el('table', {}, el('tbody', {}, ...open.map((e) => refusedRow(g, e))))];
    if (never.length) {
      const n = never.reduce((a, e) => a + e.count, 0);
      parts.push(el('details', { class: 'never' },
        el('summary', { text: n + ' refusals no grant can open (private ranges, the gateway, other guests, other resolvers: what the containment scan probes)' }),
        el('table', {}, el('tbody', {}, ...never.map((e) => el('tr', { 'data-sandbox': g.sandbox, 'data-never': e.destination },
          cell('destination', e.what, 'name'), cell('count', e.count), cell('last', e.last),
          cell('why', e.source + ' ' + e.reason)))))));
    }
    return el('div', { class: 'group' }, ...parts);
  }));
}

function liveRefused() {
  const live = document.getElementById('live');
  // Root and the admin group also follow the audit log on this stream.
  const es = new EventSource(state.admin ? '/api/events?audit=1' : '/api/events');
  es.addEventListener('audit-all', (ev) => {
    state.audit = auditLines(ev.data);
    state.auditLive = true;
    renderAudit();
  });
  es.addEventListener('audit', (ev) => {
    state.audit.push(...auditLines(ev.data));
    if (state.audit.length > 5000) state.audit.splice(0, state.audit.length - 5000);
    renderAudit();
  });
  es.addEventListener('audit-error', (ev) => {
    state.auditLive = false;
    state.auditError = ev.data;
    renderAudit();
  });
  es.addEventListener('refused', (ev) => {
    state.refused = JSON.parse(ev.data);
    live.classList.add('on');
    renderRefused();
  });
  es.onerror = () => live.classList.remove('on');
}

// --- grants ------------------------------------------------------------
async function showGrants() {
  const list = JSON.parse(await get('/api/grants'));
  const body = document.getElementById('grants-rows');
  body.replaceChildren(...list.map((g) => el('tr', { 'data-sandbox': g.sandbox, 'data-entry': g.entry },
    cell('sandbox', g.sandbox), cell('entry', g.entry, 'name'), cell('ports', g.ports),
    cell('by', g.user), cell('since', g.since),
    cell('until', g.permanent ? 'for good' : g.until, 'until'),
    el('td', {}, el('button', {
      class: 'danger revoke', text: 'revoke',
      on: async () => { if (await post('/api/unallow', { sandbox: g.sandbox, name: g.name || g.entry })) showGrants(); },
    })))));
  if (!list.length) body.replaceChildren(el('tr', {}, el('td', { colspan: 7, class: 'muted', text: 'No live grant.' })));
}

// --- audit -------------------------------------------------------------
// The log is pushed on the live stream (liveRefused): all of it at first,
// then each line it gains, within a second.
function auditLines(text) {
  return text.split('\n').filter((l) => l.startsWith('{'))
    .map((l) => { try { return JSON.parse(l); } catch (e) { return null; } }).filter(Boolean);
}

function renderAudit() {
  if (state.auditError) {
    document.getElementById('audit-rows').replaceChildren(el('tr', {}, el('td', { colspan: 5, class: 'muted', text: state.auditError })));
    return;
  }
  const f = (id) => document.getElementById(id).value.trim();
  const fs = f('f-sandbox'), fu = f('f-user'), fe = f('f-event');
  const rows = state.audit.filter((a) =>
    (!fs || a.sandbox === fs) && (!fu || a.user === fu) && (!fe || String(a.event).includes(fe)))
    .slice(-300).reverse();
  document.getElementById('audit-rows').replaceChildren(...rows.map((a) => {
    const rest = Object.entries(a).filter(([k]) => !['time', 'event', 'user', 'sandbox'].includes(k))
      .map(([k, v]) => k + '=' + (typeof v === 'string' ? v : JSON.stringify(v))).join(' ');
    return el('tr', {}, cell('time', a.time), cell('event', a.event), cell('user', a.user || ''),
      cell('sandbox', a.sandbox || ''), cell('details', rest, 'name'));
  }));
}

async function showAudit() {
  if (state.auditLive || state.auditError) { renderAudit(); return; }
  let t;
  try { t = await get('/api/log'); } catch (e) {
    state.auditError = String(e.message);
    renderAudit();
    return;
  }
  if (!state.auditLive) state.audit = auditLines(t);
  renderAudit();
}

// --- gateway -----------------------------------------------------------
async function showGateway() {
  const s = JSON.parse(await get('/api/status'));
  document.getElementById('children-rows').replaceChildren(...(s.children || []).map((c) =>
    el('tr', {}, cell('child', c.name + (c.worker != null ? ' ' + c.worker : '')), cell('pid', c.pid), cell('restarts', c.restarts))));
  const ss = JSON.parse(await get('/api/sessions'));
  document.getElementById('sessions-rows').replaceChildren(...ss.map((x) => el('tr', { 'data-session': x.id },
    cell('id', x.id, 'name'), cell('user', x.user), cell('from', x.from),
    cell('ends in', Math.ceil(x.ends_in_s / 60) + ' min'),
    el('td', {}, el('button', {
      class: 'danger', text: 'revoke',
      on: async () => { if (await post('/api/revoke', { id: x.id })) showGateway(); },
    })))));
  const dl = document.getElementById('gateway-facts');
  dl.replaceChildren();
  for (const [k, v] of Object.entries(s)) {
    if (k === 'children' || k === 'draining' || k === 'config') continue;
    dl.append(el('dt', { text: k }), el('dd', { text: typeof v === 'object' ? JSON.stringify(v) : String(v) }));
  }
}

// --- pages -------------------------------------------------------------
const pages = { sandboxes: showSandboxes, refused: async () => renderRefused(), grants: showGrants, audit: showAudit, gateway: showGateway };
let timer = null;

function route() {
  notice('');
  const page = (location.hash || '#refused').slice(1);
  const name = pages[page] ? page : 'refused';
  for (const p of Object.keys(pages)) {
    document.getElementById(p).hidden = p !== name;
    document.getElementById('nav-' + p).classList.toggle('on', p === name);
  }
  clearInterval(timer);
  const run = () => pages[name]().catch((e) => { if (e.message !== '401') notice(e.message, true); });
  run();
  if (name !== 'refused' && name !== 'audit') timer = setInterval(run, 5000);
}

async function main() {
  let me;
  try { me = JSON.parse(await get('/api/whoami')); } catch (e) { return; }
  state.csrf = me.csrf;
  state.user = me.user;
  state.admin = me.admin;
  const logout = el('button', { text: 'log out', on: async () => { await post('/api/logout', {}); location.reload(); } });
  document.getElementById('who').replaceChildren(el('span', { id: 'user', text: me.user + (me.admin ? ' (admin)' : '') + ' ' }), logout);
  for (const id of ['f-sandbox', 'f-user', 'f-event']) document.getElementById(id).addEventListener('input', renderAudit);
  document.getElementById('audit-filter').addEventListener('submit', (e) => e.preventDefault());
  window.addEventListener('hashchange', route);
  liveRefused();
  route();
  setInterval(() => loadSandboxes().catch(() => {}), 30000);
}

main();
