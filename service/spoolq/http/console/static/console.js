// spoolq console: plain JavaScript, no build step. Talks only to /console/api (see api.py).
// Routes: #/ (queues), #/queue/<store name>, #/server. Rates are computed here from the
// per-queue totals the list returns; each refresh adds one point to every sparkline.
"use strict";

const KEY_STORE = "spoolq.apiKey";
const REFRESH_MS = 2000;
const HISTORY = 60; // points per sparkline (two minutes at 2 s)
const DOORS = ["queue", "dedupq", "sqs", "mq", "disque"];
const DOOR_LABEL = { queue: "EmoDB", dedupq: "EmoDB dedup", sqs: "SQS", mq: "MQ", disque: "Disque" };

const state = {
  sort: { key: "name", asc: true }, filter: "", door: "all",
  history: {},   // store name -> { t: [...], send: [...], poll: [...], ack: [...] }
  last: {},      // store name -> { t, totals }
  queues: [], timer: null, busy: false, moveTotals: {}, rendered: null, peeked: "", gen: 0,
};

// --- helpers ------------------------------------------------------------------------------

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const fmtInt = (n) => Number(n).toLocaleString("en-US");
function fmtRate(r) { return r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2); }
function fmtAge(s) {
  if (!s) return "–";
  if (s < 60) return `${s.toFixed(0)} s`;
  if (s < 3600) return `${(s / 60).toFixed(0)} min`;
  if (s < 86400) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} d`;
}
function fmtBytes(b) {
  if (b == null) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return `${b.toFixed(i ? 1 : 0)} ${u[i]}`;
}
function fmtSecs(s) { return s == null ? "–" : s < 1 ? `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms` : `${s.toFixed(2)} s`; }
function fmtDuration(s) { return s >= 86400 && s % 86400 === 0 ? `${s / 86400} d` : s >= 3600 && s % 3600 === 0 ? `${s / 3600} h` : `${s} s`; }
const fmtTime = (t) => new Date(t * 1000).toLocaleString();
const doorBadge = (d) => `<span class="badge door-${esc(d)}" data-door="${esc(d)}">${esc(DOOR_LABEL[d] || d)}</span>`;
const queueHref = (name) => `#/queue/${encodeURIComponent(name)}`;

function toast(text, bad = false) {
  const el = document.createElement("div");
  el.className = "toast" + (bad ? " bad" : "");
  el.textContent = text;
  el.dataset.testid = "toast";
  $("#toasts").appendChild(el);
  setTimeout(() => el.remove(), 4000);
}

class ApiError extends Error { constructor(status, message) { super(message); this.status = status; } }

async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers["X-BV-API-Key"] = key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(`/console/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) { throw new ApiError(0, "the server cannot be reached"); }
  let data = null;
  try { data = await res.json(); } catch (e) { /* not JSON */ }
  if (res.status === 401) {
    // an answer to a request sent with an earlier key says nothing about the current one
    if ((sessionStorage.getItem(KEY_STORE) || null) === (key || null)) showLogin(data && data.message);
    throw new ApiError(401, "an API key is required");
  }
  if (!res.ok) throw new ApiError(res.status, (data && data.message) || `HTTP ${res.status}`);
  return data;
}

// --- sparklines (inline SVG) ------------------------------------------------------------------

function sparkline(values, color, w = 96, h = 26) {
  const pts = values.length ? values : [0];
  const max = Math.max(...pts, 1e-9);
  const step = pts.length > 1 ? w / (HISTORY - 1) : 0;
  const x0 = w - step * (pts.length - 1);
  const coords = pts.map((v, i) => [x0 + i * step, h - 2 - (v / max) * (h - 4)]);
  const line = coords.map(([x, y], i) => `${i ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`).join("");
  const area = `${line}L${w},${h}L${x0.toFixed(1)},${h}Z`;
  return `<svg class="spark" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" aria-hidden="true">
    <line x1="0" y1="${h - 1.5}" x2="${w}" y2="${h - 1.5}" stroke="#e3e6ee" stroke-width="1"/><path d="${area}" fill="${color}" fill-opacity=".12"/><path d="${line}" fill="none" stroke="${color}" stroke-width="1.5"/></svg>`;
}

function record(queues, now) {
  for (const q of queues) {
    const prev = state.last[q.store_name];
    const h = state.history[q.store_name] || (state.history[q.store_name] = { send: [], poll: [], ack: [] });
    if (prev && now > prev.t) {
      for (const op of ["send", "poll", "ack"]) {
        h[op].push(Math.max(0, (q.totals[op] - prev.totals[op]) / (now - prev.t)));
        if (h[op].length > HISTORY) h[op].shift();
      }
    }
    state.last[q.store_name] = { t: now, totals: q.totals };
  }
}
const rateOf = (name, op) => { const h = state.history[name]; return h && h[op].length ? h[op][h[op].length - 1] : 0; };
function rateCell(name, op, color) {
  const r = rateOf(name, op);
  return `<div class="rate"><b class="${r ? "" : "zero"}">${fmtRate(r)}</b>${sparkline((state.history[name] || {})[op] || [], color)}</div>`;
}

// --- login ------------------------------------------------------------------------------------

function showLogin(message) {
  $("#login").hidden = false;
  $("#login-error").textContent = sessionStorage.getItem(KEY_STORE) ? (message || "this API key is not known") : "";
  setTimeout(() => $("#login-key").focus(), 0);
}
$("#login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(KEY_STORE, $("#login-key").value);
  $("#login").hidden = true;
  $("#login-key").value = "";
  await loadSession();
  route();
});
$("#signout").addEventListener("click", () => {
  sessionStorage.removeItem(KEY_STORE);
  history.replaceState(null, "", "#/");
  location.reload();
});

async function loadSession() {
  try {
    const s = await api("/session");
    $("#who").textContent = s.open ? "open mode" : `key: ${s.principal}`;
    $("#signout").hidden = s.open || !sessionStorage.getItem(KEY_STORE);
  } catch (e) { /* 401 shows the login */ }
}

// --- queues list ------------------------------------------------------------------------------

const COLUMNS = [
  ["name", "Queue", false], ["ready", "Ready", true], ["claimed", "Claimed", true], ["delayed", "Delayed", true],
  ["dead", "Dead-lettered", true], ["oldest_age", "Oldest", true], ["send", "Sent/s", true],
  ["poll", "Received/s", true], ["ack", "Acked/s", true],
];
function sortValue(q, key) {
  if (["send", "poll", "ack"].includes(key)) return rateOf(q.store_name, key);
  if (key === "dead") return q.dead_letter ? q.dead_letter.messages : -1;
  return q[key];
}

function renderQueues() {
  const f = state.filter.toLowerCase();
  let rows = state.queues.filter((q) => (state.door === "all" || q.door === state.door)
    && (!f || q.name.toLowerCase().includes(f) || q.store_name.toLowerCase().includes(f)));
  const { key, asc } = state.sort;
  rows = rows.slice().sort((a, b) => {
    const x = sortValue(a, key), y = sortValue(b, key);
    const c = typeof x === "string" ? x.localeCompare(y) : x - y;
    return (asc ? c : -c) || a.store_name.localeCompare(b.store_name);
  });
  const total = (k) => state.queues.reduce((s, q) => s + q[k], 0);
  const allRate = (op) => state.queues.reduce((s, q) => s + rateOf(q.store_name, op), 0);
  const dead = state.queues.reduce((s, q) => s + (q.dead_letter ? q.dead_letter.messages : 0), 0);
  const head = COLUMNS.map(([k, label, num]) => `<th class="sortable ${num ? "num" : ""} ${key === k ? "sorted" + (asc ? " asc" : "") : ""}" data-sort="${k}">${label}</th>`).join("");
  const body = rows.map((q) => `
    <tr data-testid="queue-row" data-queue="${esc(q.store_name)}">
      <td><a class="qname" href="${queueHref(q.store_name)}">${esc(q.name)}</a> ${doorBadge(q.door)}
        ${q.kind !== "standard" ? `<span class="badge kind">${esc(q.kind)}</span>` : ""}
        ${q.dead_letter_sources.length ? `<span class="badge kind" title="dead-letter queue of ${esc(q.dead_letter_sources.join(", "))}">DLQ</span>` : ""}
        ${q.door !== "queue" ? `<div class="store">${esc(q.store_name)}</div>` : ""}</td>
      <td class="num" data-col="ready">${q.exact ? "" : "≈"}${fmtInt(q.ready)}</td>
      <td class="num" data-col="claimed">${fmtInt(q.claimed)}</td>
      <td class="num" data-col="delayed">${fmtInt(q.delayed)}</td>
      <td class="num" data-col="dead">${q.dead_letter ? `<span class="${q.dead_letter.messages ? "dead" : "zero"}">${fmtInt(q.dead_letter.messages)}</span>` : '<span class="zero">–</span>'}</td>
      <td class="num">${fmtAge(q.oldest_age)}</td>
      <td class="num">${rateCell(q.store_name, "send", "var(--send)")}</td>
      <td class="num">${rateCell(q.store_name, "poll", "var(--recv)")}</td>
      <td class="num">${rateCell(q.store_name, "ack", "var(--ack)")}</td>
    </tr>`).join("");
  const chips = ["all", ...DOORS.filter((d) => state.queues.some((q) => q.door === d))]
    .map((d) => `<button class="chip ${state.door === d ? "on" : ""}" data-door="${d}">${d === "all" ? "All doors" : esc(DOOR_LABEL[d])}</button>`).join("");
  const view = $("#view");
  const focused = document.activeElement && document.activeElement.id === "filter";
  view.innerHTML = `
    <div class="pagehead"><div><h1>Queues</h1><div class="sub">Every queue of every door on this store.</div></div></div>
    <div class="tiles">
      <div class="tile"><div class="label">Queues</div><div class="value" data-testid="tile-queues">${fmtInt(state.queues.length)}</div></div>
      <div class="tile"><div class="label">Ready</div><div class="value">${fmtInt(total("ready"))}</div></div>
      <div class="tile"><div class="label">Claimed</div><div class="value">${fmtInt(total("claimed"))}</div></div>
      <div class="tile"><div class="label">Delayed</div><div class="value">${fmtInt(total("delayed"))}</div></div>
      <div class="tile ${dead ? "bad" : ""}"><div class="label">Dead-lettered</div><div class="value">${fmtInt(dead)}</div></div>
      <div class="tile"><div class="label">Throughput</div><div class="value split">${fmtRate(allRate("send"))} <small>sent/s</small><br>${fmtRate(allRate("ack"))} <small>acked/s</small></div></div>
    </div>
    <div class="toolbar">
      <input type="search" id="filter" placeholder="Filter by name…" value="${esc(state.filter)}" data-testid="filter">
      <div class="chips">${chips}</div>
    </div>
    <div class="card">${rows.length ? `<table data-testid="queues"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`
      : `<div class="empty" data-testid="no-queues">${state.queues.length ? "No queue matches this filter." : "No queues yet. Send a message through any door and it shows up here."}</div>`}</div>`;
  const input = $("#filter");
  if (focused) { input.focus(); input.setSelectionRange(input.value.length, input.value.length); }
  input.addEventListener("input", () => { state.filter = input.value; renderQueues(); });
  view.querySelectorAll("th[data-sort]").forEach((th) => th.addEventListener("click", () => {
    const k = th.dataset.sort;
    state.sort = { key: k, asc: state.sort.key === k ? !state.sort.asc : k === "name" };
    renderQueues();
  }));
  view.querySelectorAll(".chip").forEach((b) => b.addEventListener("click", () => { state.door = b.dataset.door; renderQueues(); }));
}

async function refreshQueues() {
  const data = await api("/queues");
  record(data.queues, data.time);
  state.queues = data.queues;
  return data;
}

// --- one queue --------------------------------------------------------------------------------

function highlight(text) {
  let pretty = text, isJson = false;
  try { pretty = JSON.stringify(JSON.parse(text), null, 2); isJson = true; } catch (e) { /* plain text */ }
  const safe = esc(pretty);
  if (!isJson) return safe;
  return safe.replace(/(&quot;(?:[^&]|&(?!quot;))*?&quot;)(\s*:)?|\b(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\b|\b(true|false|null)\b/g,
    (m, str, colon, num, lit) => str ? `<span class="${colon ? "j-key" : "j-str"}">${str}</span>${colon || ""}`
      : num ? `<span class="j-num">${num}</span>` : `<span class="j-lit">${lit}</span>`);
}

function moveHtml(m, q) {
  // the store saves "moved" every few hundred messages; "remaining" is counted now, so the
  // largest moved + remaining seen is the total, and total - remaining the progress
  const total = state.moveTotals[m.ref] = Math.max(state.moveTotals[m.ref] || 0, m.moved + m.remaining);
  m = { ...m, moved: m.state === "IN_PROGRESS" ? Math.max(m.moved, total - m.remaining) : m.moved };
  const pct = m.state === "COMPLETE" ? 100 : total ? Math.round((m.moved / total) * 100) : 0;
  const other = m.source === q ? `→ <a href="${queueHref(m.destination)}">${esc(m.destination)}</a>` : `← <a href="${queueHref(m.source)}">${esc(m.source)}</a>`;
  return `<div class="move" data-testid="move" data-state="${m.state}">
    <div class="row"><span>${other}</span><span class="state state-${m.state}">${m.state.replace("_", " ")}</span></div>
    <div class="row"><div class="progress" style="flex:1" data-testid="move-progress"><div style="width:${pct}%"></div></div>
      <span class="mono">${fmtInt(m.moved)}${m.state === "IN_PROGRESS" ? ` / ${fmtInt(total)}` : ""}</span>
      ${m.state === "IN_PROGRESS" ? `<button class="small" data-cancel="${esc(m.ref)}" data-testid="move-cancel">Cancel</button>` : ""}</div>
    ${m.error ? `<div class="error">${esc(m.error)}</div>` : ""}</div>`;
}

function renderQueue(q, messages) {
  const s = q.settings;
  const others = state.queues.filter((o) => o.store_name !== q.store_name && o.can.post);
  const why = (perm) => q.can[perm] ? "" : `<span class="why">this key may not ${perm === "manage" ? (q.door === "sqs" ? "administer" : "poll") : perm} on this queue</span>`;
  const statTile = (label, value, extra = "") => `<div class="tile ${extra}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
  const dead = q.dead_letter ? q.dead_letter.messages : null;
  const bigRate = (op, label, color) => `<div class="bigrate"><div class="label">${label}</div><div class="value">${fmtRate(rateOf(q.store_name, op))}/s</div>${sparkline((state.history[q.store_name] || {})[op] || [], color, 260, 44)}</div>`;
  $("#view").innerHTML = `
    <div class="crumbs"><a href="#/">Queues</a> /</div>
    <div class="pagehead"><div>
      <h1 data-testid="queue-title" data-queue="${esc(q.store_name)}">${esc(q.name)} ${doorBadge(q.door)} <span class="badge kind">${esc(q.kind)}</span></h1>
      <div class="sub mono">${esc(q.store_name)} · created ${fmtTime(q.created_at)}</div></div></div>
    <div class="tiles">
      ${statTile("Ready", `<span data-testid="count-ready">${q.exact ? "" : "≈"}${fmtInt(q.ready)}</span>`)}
      ${statTile("Claimed", `<span data-testid="count-claimed">${fmtInt(q.claimed)}</span>`)}
      ${statTile("Delayed", fmtInt(q.delayed))}
      ${statTile("Dead-lettered", dead == null ? "–" : fmtInt(dead), dead ? "bad" : "")}
      ${statTile("Oldest", fmtAge(q.oldest_age))}
    </div>
    <div class="card" style="margin-bottom:16px"><h3>Rates</h3><div class="body bigrates">
      ${bigRate("send", "Sent", "var(--send)")}${bigRate("poll", "Received", "var(--recv)")}${bigRate("ack", "Acknowledged", "var(--ack)")}</div></div>
    <div class="grid cols-2">
      <div class="grid">
        <div class="card"><h3>Settings</h3><div class="body"><dl class="settings" data-testid="settings">
          <dt>Visibility timeout</dt><dd>${fmtDuration(s.visibility_timeout)}</dd>
          <dt>Delivery delay</dt><dd>${fmtDuration(s.delay)}</dd>
          <dt>Retention</dt><dd>${fmtDuration(s.retention)}</dd>
          <dt>Max message size</dt><dd>${fmtBytes(s.max_message_bytes)}</dd>
          <dt>Receive wait</dt><dd>${fmtDuration(s.receive_wait)}</dd>
          <dt>Dead-letter queue</dt><dd>${q.dead_letter ? `<a href="${queueHref(q.dead_letter.queue)}">${esc(q.dead_letter.queue)}</a> after ${q.dead_letter.max_receives} receives` : "none"}</dd>
          <dt>FIFO</dt><dd>${s.fifo ? `yes${s.content_based_dedup ? " (content-based dedup)" : ""}` : "no"}</dd>
          <dt>Archive</dt><dd>${s.archive ? `yes, kept ${fmtDuration(s.archive_retention)}` : "no"}</dd>
          ${Object.keys(q.tags).length ? `<dt>Tags</dt><dd>${Object.entries(q.tags).map(([k, v]) => `<code>${esc(k)}=${esc(v)}</code>`).join(" ")}</dd>` : ""}
        </dl></div></div>
        <div class="card"><h3>Send a test message</h3><div class="body">
          <div class="row seg" role="radiogroup" aria-label="body format" data-testid="send-format">
            <label><input type="radio" name="send-format" value="json" data-testid="send-format-json" checked> JSON</label>
            <label><input type="radio" name="send-format" value="text" data-testid="send-format-text"> Text</label>
            <span class="hint">${q.door === "queue" || q.door === "dedupq" ? "EmoDB stores JSON; text arrives as a JSON string." : "Text is sent exactly as typed."}</span></div>
          <textarea id="send-body" data-testid="send-body" placeholder='{"hello": "world"}' ${q.can.post ? "" : "disabled"}></textarea>
          <div class="check" id="send-check" data-testid="send-check"></div>
          <div class="row" style="margin-top:8px">
            ${s.fifo ? `<input id="send-group" placeholder="message group id" value="console">` : ""}
            <button class="primary" id="send" data-testid="send" ${q.can.post ? "" : "disabled"}>Send</button> ${why("post")}</div></div></div>
        <div class="card"><h3>Move messages</h3><div class="body">
          <div class="row"><select id="move-to" data-testid="move-to" ${q.can.manage ? "" : "disabled"}>
            <option value="">destination queue…</option>
            ${others.map((o) => `<option value="${esc(o.store_name)}">${esc(o.name)} (${esc(DOOR_LABEL[o.door])})</option>`).join("")}</select>
            <input id="move-rate" type="number" min="1" placeholder="max/s (optional)" style="width:150px" data-testid="move-rate">
            <button id="move" data-testid="move-start" ${q.can.manage ? "" : "disabled"}>Start move</button> ${why("manage")}</div>
          ${q.dead_letter_sources.length ? `<div class="row"><button id="redrive" data-testid="redrive" ${q.can.manage ? "" : "disabled"}>Redrive to ${esc(q.dead_letter_sources.join(", "))}</button>
            <span class="hint">Moves this dead-letter queue's messages back to its source.</span></div>` : ""}
          <div id="moves" data-testid="moves">${q.moves.map((m) => moveHtml(m, q.store_name)).join("") || '<p class="hint">No moves.</p>'}</div></div></div>
        <div class="card danger-zone"><h3>Danger zone</h3><div class="body">
          <div class="row"><button id="unclaim" data-testid="unclaim" ${q.can.manage ? "" : "disabled"}>Unclaim all</button>
            <span class="hint">Makes every claimed message visible again now.</span></div>
          <div class="row"><input id="purge-confirm" data-testid="purge-confirm" placeholder="type ${esc(q.name)} to confirm" ${q.can.manage ? "" : "disabled"}>
            <button class="danger" id="purge" data-testid="purge" disabled>Purge</button> ${why("manage")}</div>
          <p class="hint">Purge deletes every message of the queue; it cannot be undone.</p></div></div>
      </div>
      <div class="card"><div class="section-title"><h3>Messages</h3>
        <div class="row" style="padding:10px 18px 0"><select id="peek-limit"><option>10</option><option selected>20</option><option>50</option><option>200</option></select>
          <button id="peek" data-testid="peek" ${q.can.poll ? "" : "disabled"}>Peek</button></div></div>
        <div class="body"><p class="hint">Peek shows messages without claiming them (claimed ones are marked). ${why("poll")}</p>
          <div class="messages" id="messages" data-testid="messages">${messages || ""}</div></div></div>
    </div>`;
  wireQueueActions(q);
}

function messagesHtml(list) {
  if (!list.length) return '<p class="muted" data-testid="no-messages">The queue has no messages to show.</p>';
  return list.map((m) => `<div class="msg" data-testid="message">
    <header><span class="id" title="message id">${esc(m.id)}</span><span>${fmtTime(m.sent_at)}</span>
      <span>received ${m.receive_count}×</span><span>${fmtBytes(m.size)}</span>
      ${m.group_id ? `<span>group <code>${esc(m.group_id)}</code></span>` : ""}
      ${m.claimed_until ? `<span class="badge claimed">claimed until ${new Date(m.claimed_until * 1000).toLocaleTimeString()}</span>` : ""}
      ${m.encoding === "base64" ? '<span class="badge">binary, base64</span>' : ""}</header>
    <pre>${m.encoding === "base64" ? esc(m.body) : highlight(m.body)}</pre></div>`).join("");
}

// The test send's body: JSON unless the user chose text; a body that does not parse is refused
// here with where it fails (the server checks again), never sent as a string behind their back.
function jsonProblem(text) {
  try { JSON.parse(text); return ""; } catch (e) { return e.message; }
}
function showBodyCheck(text, format) {
  const el = $("#send-check");
  const problem = format === "json" && text.trim() ? jsonProblem(text) : "";
  el.className = "check" + (problem ? " bad" : text.trim() && format === "json" ? " ok" : "");
  el.textContent = problem ? `Not valid JSON: ${problem}. Correct it, or choose Text to send it as typed.`
    : text.trim() && format === "json" ? "Valid JSON" : "";
  return problem ? `Not sent: the body is not valid JSON (${problem})` : "";
}

function act(button, fn) {
  button.addEventListener("click", async () => {
    if (state.busy) return;
    state.busy = true; button.disabled = true;
    try { await fn(); } catch (e) { if (e.status !== 401) toast(e.message, true); }
    finally { state.busy = false; button.disabled = false; }
  });
}

function wireQueueActions(q) {
  const name = encodeURIComponent(q.store_name);
  const peek = async () => {
    const data = await api(`/queues/${name}/messages?limit=${$("#peek-limit").value}`);
    state.peeked = messagesHtml(data.messages);
    $("#messages").innerHTML = state.peeked;
  };
  if ($("#peek")) act($("#peek"), peek);
  const format = () => document.querySelector("input[name=send-format]:checked").value;
  const check = () => showBodyCheck($("#send-body").value, format());
  $("#send-body").addEventListener("input", check);
  document.querySelectorAll("input[name=send-format]").forEach((r) => r.addEventListener("change", check));
  act($("#send"), async () => {
    const body = $("#send-body").value;
    if (!body) { toast("Type a message body first", true); return; }
    const problem = check();
    if (problem) { toast(problem, true); return; }
    const group = $("#send-group");
    const r = await api(`/queues/${name}/messages`, { method: "POST", body: { body, format: format(), group_id: group ? group.value : null } });
    toast(`Sent ${r.format === "text" ? "as text " : ""}${r.id.slice(0, 12)}…`);
    await showQueue(q.store_name, true);
  });
  const confirm = $("#purge-confirm");
  confirm.addEventListener("input", () => { $("#purge").disabled = confirm.value !== q.name; });
  act($("#purge"), async () => {
    await api(`/queues/${name}/purge`, { method: "POST", body: { confirm: confirm.value } });
    toast(`Purged ${q.name}`);
    state.peeked = ""; await showQueue(q.store_name, true);
  });
  $("#purge").disabled = true;
  act($("#unclaim"), async () => {
    await api(`/queues/${name}/unclaim`, { method: "POST", body: {} });
    toast("Every claim released"); await showQueue(q.store_name, true);
  });
  act($("#move"), async () => {
    const to = $("#move-to").value;
    if (!to) { toast("Choose a destination queue", true); return; }
    const rate = parseInt($("#move-rate").value, 10);
    const m = await api(`/queues/${name}/move`, { method: "POST", body: { to, max_per_second: rate > 0 ? rate : null } });
    state.moveTotals[m.ref] = m.moved + m.remaining; // exact when the move starts
    toast("Move started"); await showQueue(q.store_name, true);
  });
  if ($("#redrive")) act($("#redrive"), async () => {
    await api(`/queues/${name}/redrive`, { method: "POST", body: {} });
    toast("Redrive started"); await showQueue(q.store_name, true);
  });
  document.querySelectorAll("[data-cancel]").forEach((b) => act(b, async () => {
    await api(`/moves/${encodeURIComponent(b.dataset.cancel)}/cancel`, { method: "POST", body: {} });
    toast("Move cancelled"); await showQueue(q.store_name, true);
  }));
}

async function showQueue(storeName, keepMessages, gen = state.gen) {
  const [q] = await Promise.all([api(`/queues/${encodeURIComponent(storeName)}`), refreshQueues()]);
  if (gen !== state.gen) return; // the user went elsewhere meanwhile
  // keep what the user typed across refreshes
  const same = state.rendered === storeName;
  const typed = { body: same ? $("#send-body")?.value : undefined, confirm: $("#purge-confirm")?.value, to: $("#move-to")?.value,
                  format: document.querySelector("input[name=send-format]:checked")?.value,
                  rate: $("#move-rate")?.value, limit: $("#peek-limit")?.value };
  const focus = document.activeElement && document.activeElement.id;
  renderQueue(q, keepMessages ? state.peeked : "");
  state.rendered = storeName;
  if (typed.body !== undefined) {
    $("#send-body").value = typed.body; $("#purge-confirm").value = typed.confirm || "";
    $("#move-to").value = typed.to || ""; $("#move-rate").value = typed.rate || ""; $("#peek-limit").value = typed.limit || "20";
    $("#purge").disabled = !q.can.manage || $("#purge-confirm").value !== q.name;
    const fmt = document.querySelector(`input[name=send-format][value=${typed.format || "json"}]`);
    if (fmt) fmt.checked = true;
    showBodyCheck(typed.body, typed.format || "json");
  }
  if (focus && $("#" + focus)) $("#" + focus).focus();
}

// --- server -----------------------------------------------------------------------------------

function bars(buckets, fmt) {
  const entries = Object.entries(buckets).filter(([le]) => le !== "+Inf").map(([le, c]) => [parseFloat(le), c]).sort((a, b) => a[0] - b[0]);
  let prev = 0;
  const counts = entries.map(([le, c]) => { const n = c - prev; prev = c; return [le, n]; });
  const max = Math.max(1, ...counts.map(([, n]) => n));
  return `<div class="bars">${counts.map(([le, n]) => `<div title="≤ ${fmt(le)}: ${fmtInt(n)}"><span class="bar" style="height:${(n / max) * 100}%"></span><small>${fmt(le)}</small></div>`).join("")}</div>`;
}

async function showServer(gen = state.gen) {
  const s = await api("/server");
  if (gen !== state.gen) return;
  const tile = (label, value, id) => `<div class="tile"><div class="label">${label}</div><div class="value" ${id ? `data-testid="${id}"` : ""}>${value}</div></div>`;
  $("#view").innerHTML = `
    <div class="pagehead"><div><h1>Server</h1><div class="sub">This node of the service.</div></div></div>
    <div class="tiles">
      ${tile("Node", esc(s.node), "server-node")}${tile("Version", esc(s.version))}
      ${tile("Free space", fmtBytes(s.free_bytes), "server-free")}${tile("Queues", fmtInt(s.queues))}
      ${tile("Workers", `${s.workers} <small>× ${s.threads} threads</small>`)}${tile("Long polls waiting", fmtInt(s.long_polls_waiting))}
    </div>
    <div class="grid cols-2">
      <div class="card"><h3>Storage</h3><div class="body"><dl class="settings">
        <dt>Root</dt><dd class="mono" data-testid="server-root">${esc(s.root)}</dd>
        <dt>Durability</dt><dd>${s.fsync ? `every send flushed (${esc(s.flush)})` : "no flush (fsync never)"}</dd>
        <dt>Group-commit flushes</dt><dd>${fmtInt(s.flushes)}</dd>
        <dt>Mean flush latency</dt><dd data-testid="server-flush">${fmtSecs(s.flush_seconds_avg)}</dd>
        <dt>Mean writers per flush</dt><dd>${s.flush_batch_avg == null ? "–" : s.flush_batch_avg.toFixed(1)}</dd>
        <dt>Access</dt><dd>${s.open ? "open (no API keys)" : "API keys required"}</dd>
        <dt>Worker answering</dt><dd>pid ${s.pid}, up since ${fmtTime(s.started_at)}</dd></dl></div></div>
      <div class="grid">
        <div class="card"><h3>Flush latency</h3><div class="body">${bars(s.flush_seconds_buckets, (v) => v < 1 ? `${v * 1000}ms` : `${v}s`)}</div></div>
        <div class="card"><h3>Group-commit sizes (writers per flush)</h3><div class="body">${bars(s.flush_batch_buckets, (v) => `${v}`)}</div></div>
      </div>
    </div>`;
}

// --- routing and refresh ----------------------------------------------------------------------

function current() {  // the page the URL fragment names
  const h = location.hash.replace(/^#/, "") || "/";
  if (h.startsWith("/queue/")) return { page: "queue", name: decodeURIComponent(h.slice(7)) };
  if (h === "/server") return { page: "server" };
  return { page: "queues" };
}

async function tick(first) {
  const r = current(), gen = state.gen;
  try {
    if (r.page === "queues") { await refreshQueues(); if (gen === state.gen) renderQueues(); }
    else if (r.page === "queue") { if (first || !isTyping()) await showQueue(r.name, !first, gen); }
    else await showServer(gen);
    if (gen !== state.gen) return;
    $("#live").classList.remove("stale");
  } catch (e) {
    if (gen !== state.gen) return;
    $("#live").classList.add("stale");
    if (e.status === 404 && r.page === "queue") $("#view").innerHTML = `<div class="card empty" data-testid="not-found">${esc(e.message)}. <a href="#/">All queues</a></div>`;
    else if (e.status !== 401 && first) $("#view").innerHTML = `<div class="card empty">${esc(e.message)}</div>`;
  }
}
function isTyping() { const a = document.activeElement; return a && ["TEXTAREA", "SELECT"].includes(a.tagName); }

function route() {
  const r = current();
  document.querySelectorAll("[data-nav]").forEach((a) => a.classList.toggle("active", a.dataset.nav === (r.page === "server" ? "server" : "queues")));
  if (r.page !== "queue") state.peeked = "";
  state.gen += 1;
  clearInterval(state.timer);
  tick(true);
  state.timer = setInterval(() => { if (!document.hidden && $("#login").hidden) tick(false); }, REFRESH_MS);
}

window.addEventListener("hashchange", () => { state.peeked = ""; route(); });
loadSession().then(route);
