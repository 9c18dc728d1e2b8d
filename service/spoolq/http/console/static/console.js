// spoolq console: plain JavaScript, no build step, classic scripts loaded in order (console.js,
// queues.js, queue.js, settings.js, server.js, main.js) sharing these globals. Talks only to /console/api (see
// api.py). Routes: #/ (queues), #/queue/<store name>, #/server.
"use strict";

const KEY_STORE = "spoolq.apiKey";
const REFRESH_MS = 2000;
const DOORS = ["queue", "dedupq", "sqs", "mq", "disque"];
const DOOR_LABEL = { queue: "EmoDB", dedupq: "EmoDB dedup", sqs: "SQS", mq: "MQ", disque: "Disque", service: "console" };

const state = {
  sort: { key: "name", asc: true }, filter: "", door: "all",
  live: {},      // store name -> { send, poll, ack }: per second between the last two refreshes
  last: {},      // store name -> { t, totals }
  rates: {},     // "<window>:<queue or empty>" -> { slot, data }: the server's history
  queues: [], timer: null, busy: false, moveTotals: {}, rendered: null, shown: null, editing: null, gen: 0, pageWindow: 600,
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
const fmtAgo = (s) => s == null ? "never" : s < 1 ? "just now" : `${fmtAge(s)} ago`;

// Who is consuming: polls waiting now (HTTP long polls, blocked Disque GETJOBs) and the latest poll.
function consumersCell(c) {
  const waiting = c.waiting ? `<span class="waiting" title="polls waiting for a message now"><i></i>${fmtInt(c.waiting)} waiting</span>` : "";
  const last = c.last_poll_age == null ? '<span class="zero">no polls</span>' : `<small class="muted">polled ${fmtAgo(c.last_poll_age)}</small>`;
  return `<div class="consumers">${waiting}${last}</div>`;
}

// A click is a press and a release; a refresh that redraws the page between the two puts a new
// button under the pointer and the click is lost. Redraws wait until no press is under way (and
// one task more, so the click's own handler runs first).
let pressing = null;  // a promise that resolves once the press under way ends
document.addEventListener("pointerdown", () => {
  if (!pressing) { let end; pressing = new Promise((resolve) => { end = resolve; }); pressing.end = end; }
}, true);
function pressOver() { if (pressing) { const p = pressing; pressing = null; setTimeout(p.end, 0); } }
["pointerup", "pointercancel"].forEach((type) => document.addEventListener(type, pressOver, true));
window.addEventListener("blur", pressOver);
const noPressUnderWay = () => pressing || Promise.resolve();

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

// --- rates and sparklines (inline SVG) --------------------------------------------------------

// The sparklines draw the server's history (GET /console/api/rates: a point every five seconds,
// kept an hour; see spoolq/http/rates.py), so a page opened now shows the recent past. The figure
// beside each is the live rate, from the per-queue totals the list returns at every refresh; until
// two refreshes have come, it is the history's latest point.
const LIST_WINDOW = 600;   // the list's sparklines: the last ten minutes
const PAGE_WINDOWS = { 600: "10 min", 3600: "1 hour" };  // a queue's charts (state.pageWindow)
const OPS = ["send", "poll", "ack"];

function sparkline(values, color, w = 72, h = 26, fluid = false) {
  const known = values.filter((v) => v != null);
  const top = Math.max(...known, 1e-9);
  const step = values.length > 1 ? w / (values.length - 1) : 0;
  const y = (v) => (h - 2 - (v / top) * (h - 4)).toFixed(1);
  let line = "", area = "", seg = [];
  const flush = () => {
    if (seg.length) {
      const path = seg.map(([x, v], i) => `${i ? "L" : "M"}${x.toFixed(1)},${y(v)}`).join("");
      line += path;
      area += `${path}L${seg[seg.length - 1][0].toFixed(1)},${h}L${seg[0][0].toFixed(1)},${h}Z`;
    }
    seg = [];
  };
  values.forEach((v, i) => { if (v == null) flush(); else seg.push([i * step, v]); });
  flush();
  const size = fluid ? `width="100%" height="${h}" preserveAspectRatio="none"` : `width="${w}" height="${h}"`;
  return `<svg class="spark" ${size} viewBox="0 0 ${w} ${h}" aria-hidden="true" data-points="${known.length}" data-max="${known.length ? Math.max(...known) : 0}">
    <line x1="0" y1="${h - 1.5}" x2="${w}" y2="${h - 1.5}" stroke="#e3e6ee" stroke-width="1" vector-effect="non-scaling-stroke"/><path d="${area}" fill="${color}" fill-opacity=".12"/><path d="${line}" fill="none" stroke="${color}" stroke-width="1.5" vector-effect="non-scaling-stroke"/></svg>`;
}

// live rates: messages per second between the last two list refreshes
function record(queues, now) {
  for (const q of queues) {
    const prev = state.last[q.store_name];
    if (prev && now > prev.t) {
      state.live[q.store_name] = Object.fromEntries(OPS.map((op) => [op, Math.max(0, (q.totals[op] - prev.totals[op]) / (now - prev.t))]));
    }
    state.last[q.store_name] = { t: now, totals: q.totals };
  }
}

// the server's history: fetched again when a new five-second point may exist
async function loadRates(window, queue, now) {
  const key = `${window}:${queue || ""}`;
  const slot = Math.floor(now / 5);
  const have = state.rates[key];
  if (have && have.slot === slot) return have.data;
  const data = await api(`/rates?window=${window}${queue ? `&queue=${encodeURIComponent(queue)}` : ""}`);
  state.rates[key] = { slot, data };
  return data;
}
function historyOf(name, op, window = LIST_WINDOW) {
  const r = state.rates[`${window}:`] || state.rates[`${window}:${name}`];
  if (!r) return [];
  const q = r.data.queues[name];
  return q ? q[op] : r.data.covered.map((c) => (c ? 0 : null));
}
function rateOf(name, op) {
  const live = state.live[name];
  if (live) return live[op];
  const h = [...historyOf(name, op), ...historyOf(name, op, state.pageWindow)].filter((v) => v != null);
  return h.length ? h[h.length - 1] : 0;
}
function rateCell(name, op, color) {
  const r = rateOf(name, op);
  return `<div class="rate" data-op="${op}"><b class="${r ? "" : "zero"}">${fmtRate(r)}</b>${sparkline(historyOf(name, op), color)}</div>`;
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

// --- dialogs ----------------------------------------------------------------------------------

// One dialog at a time, over the page; Escape or Cancel closes it. The refresh leaves the page
// under it alone while it is open (see main.js).
function openDialog(html) {
  const box = $("#dialog");
  box.innerHTML = `<form class="card dialog" novalidate>${html}</form>`;
  box.hidden = false;
  box.querySelectorAll("[data-close]").forEach((b) => b.addEventListener("click", closeDialog));
  const first = box.querySelector("input:not([type=checkbox]):not([type=radio]), select");
  if (first) setTimeout(() => first.focus(), 0);
  return box.querySelector("form");
}
function closeDialog() { $("#dialog").hidden = true; $("#dialog").innerHTML = ""; }
const dialogOpen = () => !$("#dialog").hidden;
document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && dialogOpen()) closeDialog(); });
