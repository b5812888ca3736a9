// The dashboard page (dashboard.h): one HTML document with its style and script, no external
// resource. It polls /api/node here and on every node gossip names with an HTTP address.
#include "tessera/server/dashboard.h"

namespace tessera::server {

const char* const kDashboardHtml = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tessera dashboard</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
  h1 { font-size: 1.4em; margin: 0 0 .2em; }
  h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
  .sub { color: #666; }
  table { border-collapse: collapse; }
  th, td { text-align: left; padding: .25em .8em .25em 0; border-bottom: 1px solid #eee; }
  th { color: #555; font-weight: 600; }
  .up { color: #087f23; font-weight: 600; }
  .suspect { color: #b26a00; font-weight: 600; }
  .down { color: #c62828; font-weight: 600; }
  .charts { display: flex; gap: 2em; flex-wrap: wrap; }
  svg { border: 1px solid #ddd; background: #fafafa; }
  .legend span { margin-right: 1em; }
  .mono { font-family: ui-monospace, monospace; }
  #error { color: #c62828; }
</style>
</head>
<body>
<h1>Tessera <span id="cluster" class="sub"></span></h1>
<div class="sub">served by <span id="self" class="mono"></span>; updated <span id="updated">never</span>
  <span id="error"></span></div>
<div id="auth" class="sub" hidden>Admin token:
  <input id="token-input" type="password" size="30" autocomplete="off">
  <button id="token-use" type="button">Use</button>
  <span id="token-state"></span></div>
<div id="action-result" class="mono"></div>

<h2>Nodes</h2>
<table>
  <thead><tr><th>Node</th><th>DC / rack</th><th>State</th><th>Phi</th><th>Load</th>
    <th>Role</th><th>Tablets</th><th>Primaries</th><th>Status</th><th>Actions</th></tr></thead>
  <tbody id="nodes"></tbody>
</table>

<h2>Requests</h2>
<div class="charts">
  <div><div>Requests per second</div>
    <svg id="chart-rps" width="460" height="180" data-samples="0"></svg></div>
  <div><div>p99 latency (ms)</div>
    <svg id="chart-p99" width="460" height="180" data-samples="0"></svg></div>
</div>
<div id="legend" class="legend"></div>

<h2>Operations in progress</h2>
<table>
  <thead><tr><th>Node</th><th>Flushes and compactions running</th><th>Queued</th>
    <th>Done since start</th><th>Replica rebuilds</th><th>Streams</th><th>Serving</th></tr></thead>
  <tbody id="operations"></tbody>
</table>

<h2>Tables and tablets</h2>
<table>
  <thead><tr><th>Table</th><th>Rows</th><th>Epoch</th><th>Primary</th><th>Replicas</th></tr></thead>
  <tbody id="tablets"></tbody>
</table>
<p class="sub" id="actions-note">Admin actions (flush, compact, repair, decommission, drain) are offered to an
  administrator of a node started with <span class="mono">--auth</span>; without it the page is
  read-only (<span class="mono">tessera admin</span> does them).</p>

<script>
'use strict';
const COLORS = ['#1565c0', '#c62828', '#2e7d32', '#6a1b9a', '#ef6c00', '#00838f', '#5d4037'];
const KEEP = 60;  // samples per chart
const history = {};  // endpoint -> {prev, rps: [], p99: []}
let samples = 0;

function human(bytes) {
  if (bytes < 0) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  while (bytes >= 1024 && u < units.length - 1) { bytes /= 1024; u++; }
  return (u === 0 ? bytes : bytes.toFixed(1)) + ' ' + units[u];
}
function cell(row, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
}
// The admin token: from the box, or once from the URL's #token=..., kept in this tab only.
function token() { return sessionStorage.getItem('tessera-token') || ''; }
function takeTokenFromUrl() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem('tessera-token', decodeURIComponent(m[1]));
  window.history.replaceState(null, '', location.pathname + location.search);
}
async function act(http, endpoint, action) {
  const out = document.getElementById('action-result');
  out.textContent = action + ' on ' + endpoint + ' ...';
  try {
    const r = await fetch((http ? 'http://' + http : '') + '/api/action', {
      method: 'POST', cache: 'no-store',
      headers: {'Authorization': 'Bearer ' + token(), 'Content-Type': 'application/json'},
      body: JSON.stringify({action: action})});
    const a = await r.json();
    out.textContent = action + ' on ' + endpoint + ': ' + (r.ok ? a.message : 'refused (HTTP ' + r.status + '): ' + a.error);
    out.setAttribute('data-status', String(r.status));
  } catch (e) {
    out.textContent = action + ' on ' + endpoint + ': ' + String(e);
    out.setAttribute('data-status', 'error');
  }
}
function actions(row, n, self, auth) {
  const td = document.createElement('td');
  if (auth && token()) {
    for (const action of ['flush', 'compact', 'repair', 'decommission', 'drain']) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = action;
      b.setAttribute('data-action', action);
      b.setAttribute('data-endpoint', n.endpoint);
      const http = n.is_self ? '' : n.http_address;
      b.onclick = () => {
        if (action === 'drain' && !confirm('Drain ' + n.endpoint + '? It stops serving for good.')) return;
        if (action === 'decommission' && !confirm('Decommission ' + n.endpoint + '? Its replicas move to other nodes, then it leaves the cluster.')) return;
        act(http, n.endpoint, action);
      };
      td.appendChild(b);
    }
  }
  row.appendChild(td);
}
async function fetchNode(base) {
  const r = await fetch(base + '/api/node', {cache: 'no-store'});
  if (!r.ok) throw new Error(base + ': HTTP ' + r.status);
  return r.json();
}
// Requests per second and p99 (ms) since the previous sample of this node.
function rate(endpoint, calls, now) {
  const h = history[endpoint] || (history[endpoint] = {prev: null, rps: [], p99: []});
  if (h.prev) {
    const dt = (now - h.prev.t) / 1000;
    const dn = calls.count - h.prev.count;
    let p99 = 0;
    if (dn > 0) {
      const bounds = calls.bounds_seconds;
      p99 = bounds[bounds.length - 1] * 1000;
      for (let i = 0; i < bounds.length; i++) {
        if (calls.cumulative[i] - h.prev.cumulative[i] >= 0.99 * dn) { p99 = bounds[i] * 1000; break; }
      }
    }
    h.rps.push(dt > 0 ? dn / dt : 0);
    h.p99.push(p99);
    if (h.rps.length > KEEP) { h.rps.shift(); h.p99.shift(); }
  }
  h.prev = {t: now, count: calls.count, cumulative: calls.cumulative};
}
function draw(id, key, endpoints) {
  const svg = document.getElementById(id);
  const w = svg.width.baseVal.value, ht = svg.height.baseVal.value;
  let max = 1;
  for (const e of endpoints) for (const v of (history[e] ? history[e][key] : [])) max = Math.max(max, v);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const ns = 'http://www.w3.org/2000/svg';
  const label = document.createElementNS(ns, 'text');
  label.setAttribute('x', 4); label.setAttribute('y', 14); label.setAttribute('font-size', 11);
  label.textContent = 'max ' + max.toFixed(max < 10 ? 2 : 0);
  svg.appendChild(label);
  endpoints.forEach((e, i) => {
    const values = history[e] ? history[e][key] : [];
    if (values.length === 0) return;
    const line = document.createElementNS(ns, 'polyline');
    const pts = values.map((v, j) => {
      const x = (w - 8) * (KEEP - values.length + j) / (KEEP - 1) + 4;
      const y = ht - 6 - (ht - 24) * v / max;
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    line.setAttribute('points', pts.join(' '));
    line.setAttribute('fill', 'none');
    line.setAttribute('stroke', COLORS[i % COLORS.length]);
    line.setAttribute('stroke-width', 2);
    line.setAttribute('data-endpoint', e);
    svg.appendChild(line);
  });
  svg.setAttribute('data-samples', String(samples));
}
function render(self, answers) {
  const status = self.status || {nodes: []};
  document.getElementById('auth').hidden = !self.auth;
  document.getElementById('token-state').textContent = token() ? 'token set' : 'no token: read-only';
  document.getElementById('cluster').textContent = "cluster '" + (status.cluster_name || '') + "'";
  document.getElementById('self').textContent = self.endpoint;
  const nodes = document.getElementById('nodes');
  nodes.textContent = '';
  for (const n of status.nodes) {
    const a = answers[n.endpoint];
    let tablets = '', primaries = '';
    if (a && a.tablets) {
      tablets = (a.tablets.tablets || []).length;
      primaries = (a.tablets.tablets || []).filter(t => t.is_primary).length;
    }
    const row = document.createElement('tr');
    row.setAttribute('data-endpoint', n.endpoint);
    cell(row, n.endpoint + (n.is_self ? ' (this node)' : ''), 'mono');
    cell(row, (n.dc || '') + ' / ' + (n.rack || ''));
    cell(row, n.liveness, n.liveness);
    cell(row, n.is_self ? '' : Number(n.phi).toFixed(1));
    cell(row, human(Number(n.load_bytes)));
    cell(row, n.is_master ? 'master' : '');
    cell(row, String(tablets));
    cell(row, String(primaries));
    cell(row, n.status);
    actions(row, n, self, self.auth);
    nodes.appendChild(row);
  }
  const endpoints = status.nodes.map(n => n.endpoint);
  draw('chart-rps', 'rps', endpoints);
  draw('chart-p99', 'p99', endpoints);
  const legend = document.getElementById('legend');
  legend.textContent = '';
  endpoints.forEach((e, i) => {
    const s = document.createElement('span');
    s.style.color = COLORS[i % COLORS.length];
    s.textContent = '\u25A0 ' + e;
    legend.appendChild(s);
  });
  const ops = document.getElementById('operations');
  ops.textContent = '';
  for (const e of endpoints) {
    const a = answers[e];
    if (!a) continue;
    let rebuilds = 0;
    for (const t of (a.tablets && a.tablets.tablets) || []) {
      if (t.copying || (t.needs_rebuild || []).length > 0) rebuilds++;
    }
    const row = document.createElement('tr');
    cell(row, e, 'mono');
    cell(row, String(a.jobs.running));
    cell(row, String(a.jobs.pending));
    cell(row, a.jobs.flushes + ' flushes, ' + a.jobs.compactions + ' compactions');
    cell(row, String(rebuilds));
    const st = a.streams || {sending: 0, receiving: 0, sending_bytes: 0};
    cell(row, st.sending + ' out, ' + st.receiving + ' in' +
        (st.sending > 0 ? ' (' + human(st.sending_bytes) + ' sent)' : ''));
    cell(row, a.drained ? 'drained' : (a.serving ? 'yes' : 'no'));
    ops.appendChild(row);
  }
  // Tablets: each tablet once, as its primary's node describes it (else any replica's).
  const byId = {};
  for (const e of endpoints) {
    const a = answers[e];
    for (const t of (a && a.tablets && a.tablets.tablets) || []) {
      if (!byId[t.tablet_id] || t.is_primary) byId[t.tablet_id] = t;
    }
  }
  const tb = document.getElementById('tablets');
  tb.textContent = '';
  const list = Object.values(byId).sort((x, y) =>
      (x.table_name + '\0' + x.start_row).localeCompare(y.table_name + '\0' + y.start_row));
  for (const t of list) {
    const row = document.createElement('tr');
    cell(row, (t.table_name || '').replace(/^projects\/[^/]*\/instances\/[^/]*\/tables\//, ''));
    cell(row, '[' + (t.start_row ? atob(t.start_row) : '') + ', ' + (t.end_row ? atob(t.end_row) : '\u221E') + ')', 'mono');
    cell(row, String(t.config_epoch || ''));
    cell(row, t.primary || '', 'mono');
    cell(row, (t.replicas || []).join(', '), 'mono');
    tb.appendChild(row);
  }
}
async function poll() {
  const now = Date.now();
  try {
    const self = await fetchNode('');
    const answers = {};
    answers[self.endpoint] = self;
    const others = ((self.status && self.status.nodes) || [])
        .filter(n => !n.is_self && n.http_address && n.liveness !== 'down');
    await Promise.all(others.map(async n => {
      try { answers[n.endpoint] = await fetchNode('http://' + n.http_address); } catch (e) {}
    }));
    samples++;
    for (const [e, a] of Object.entries(answers)) rate(e, a.calls, now);
    render(self, answers);
    document.getElementById('updated').textContent = new Date(now).toLocaleTimeString();
    document.getElementById('error').textContent = '';
  } catch (e) {
    document.getElementById('error').textContent = String(e);
  }
}
takeTokenFromUrl();
document.getElementById('token-use').onclick = () => {
  sessionStorage.setItem('tessera-token', document.getElementById('token-input').value.trim());
  document.getElementById('token-input').value = '';
  poll();
};
poll();
setInterval(poll, 1000);
</script>
</body>
</html>
)HTML";

}  // namespace tessera::server
