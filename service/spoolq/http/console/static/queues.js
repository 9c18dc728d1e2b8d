// The queue list (#/): every queue the key may see, rates, filters; creating and deleting queues.
"use strict";

// --- queues list ------------------------------------------------------------------------------

const COLUMNS = [
  ["name", "Queue", false], ["ready", "Ready", true], ["claimed", "Claimed", true], ["delayed", "Delayed", true],
  ["dead", "Dead-lettered", true], ["oldest_age", "Oldest", true], ["consumers", "Consumers", true], ["send", "Sent/s", true],
  ["poll", "Received/s", true], ["ack", "Acked/s", true],
];
function sortValue(q, key) {
  if (["send", "poll", "ack"].includes(key)) return rateOf(q.store_name, key);
  if (key === "dead") return q.dead_letter ? q.dead_letter.messages : -1;
  if (key === "consumers") return q.consumers.waiting * 1e9 - (q.consumers.last_poll_age ?? 1e9);
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
        ${q.kind === "dedup" || q.kind === "sqs-fifo" ? `<span class="badge kind" data-testid="kind">${esc(q.kind)}</span>` : ""}
        ${q.dead_letter_sources.length ? `<span class="badge kind" title="dead-letter queue of ${esc(q.dead_letter_sources.join(", "))}">DLQ</span>` : ""}
        ${q.door !== "queue" ? `<div class="store">${esc(q.store_name)}</div>` : ""}</td>
      <td class="num" data-col="ready">${q.exact ? "" : "≈"}${fmtInt(q.ready)}</td>
      <td class="num" data-col="claimed">${fmtInt(q.claimed)}</td>
      <td class="num" data-col="delayed">${fmtInt(q.delayed)}</td>
      <td class="num" data-col="dead">${q.dead_letter ? `<span class="${q.dead_letter.messages ? "dead" : "zero"}">${fmtInt(q.dead_letter.messages)}</span>` : '<span class="zero">–</span>'}</td>
      <td class="num">${fmtAge(q.oldest_age)}</td>
      <td class="num" data-col="consumers">${consumersCell(q.consumers)}</td>
      <td class="num">${rateCell(q.store_name, "send", "var(--send)")}</td>
      <td class="num">${rateCell(q.store_name, "poll", "var(--recv)")}</td>
      <td class="num">${rateCell(q.store_name, "ack", "var(--ack)")}</td>
    </tr>`).join("");
  const chips = ["all", ...DOORS.filter((d) => state.queues.some((q) => q.door === d))]
    .map((d) => `<button class="chip ${state.door === d ? "on" : ""}" data-door="${d}">${d === "all" ? "All doors" : esc(DOOR_LABEL[d])}</button>`).join("");
  const view = $("#view");
  const focused = document.activeElement && document.activeElement.id === "filter";
  view.innerHTML = `
    <div class="pagehead"><div><h1>Queues</h1><div class="sub">Every queue of every door on this store.</div></div>
      <div class="spacer"></div>
      <button id="delete-empty" data-testid="delete-empty" title="Delete queues that hold no message">Delete empty queues…</button>
      <button class="primary" id="new-queue" data-testid="new-queue">+ New queue</button></div>
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
  $("#new-queue").addEventListener("click", showCreate);
  $("#delete-empty").addEventListener("click", showDeleteEmpty);
}

// --- creating a queue -------------------------------------------------------------------------

// The kinds of queue (the same words as `spoolq create --kind`), what each door calls a queue, and
// its name rule (the server checks the same, see admin.py).
const NEW_KINDS = [
  ["emodb", "EmoDB queue", "/queue/1", "1-255 characters of a-z 0-9 - . : @ _ (lowercase)"],
  ["dedup", "EmoDB dedup queue", "/dedupq/1", "1-255 characters of a-z 0-9 - . : @ _ (lowercase)"],
  ["sqs", "SQS standard queue", "SQS", "1-80 characters of A-Z a-z 0-9 - _"],
  ["sqs-fifo", "SQS FIFO queue", "SQS", "1-75 characters of A-Z a-z 0-9 - _, then .fifo (added if you leave it out)"],
  ["mq", "MQ queue", "/mq", "1-255 characters of A-Z a-z 0-9 : @ . _ -"],
  ["disque", "Disque queue", "RESP", "1-393 characters of A-Z a-z 0-9 . _ : @ -"],
];

function showCreate() {
  const form = openDialog(`
    <h2>New queue</h2>
    <label class="field">Door and kind<select id="new-kind" data-testid="new-kind">
      ${NEW_KINDS.map(([v, label, where]) => `<option value="${v}">${esc(label)} (${esc(where)})</option>`).join("")}</select></label>
    <label class="field">Name<input id="new-name" data-testid="new-name" autocomplete="off" spellcheck="false" required></label>
    <p class="hint" id="new-rule"></p>
    <label class="field" id="new-region-row" hidden>Region<input id="new-region" data-testid="new-region" placeholder="the service's SQS region"></label>
    <label class="check-row" id="new-cbd-row" hidden><input type="checkbox" id="new-cbd" data-testid="new-cbd"> Content-based deduplication</label>
    <p class="error" id="new-error" data-testid="new-error"></p>
    <div class="row end"><button type="button" data-close>Cancel</button>
      <button type="submit" class="primary" data-testid="new-submit">Create queue</button></div>`);
  const kind = $("#new-kind");
  const sync = () => {
    const k = NEW_KINDS.find(([v]) => v === kind.value);
    $("#new-rule").textContent = `Names: ${k[3]}.`;
    $("#new-region-row").hidden = !kind.value.startsWith("sqs");
    $("#new-cbd-row").hidden = kind.value !== "sqs-fifo";
  };
  kind.addEventListener("change", sync);
  sync();
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fifo = kind.value === "sqs-fifo";
    let name = $("#new-name").value.trim();
    if (fifo && name && !name.endsWith(".fifo")) name += ".fifo";
    if (!name) { $("#new-error").textContent = "Type a name"; return; }
    const body = { kind: kind.value, name, content_based_dedup: fifo && $("#new-cbd").checked,
                   region: kind.value.startsWith("sqs") && $("#new-region").value.trim() || null };
    try {
      const made = await api("/queues", { method: "POST", body });
      closeDialog();
      toast(`Created the ${DOOR_LABEL[made.door]} queue ${made.name}`);
      location.hash = queueHref(made.store_name);
    } catch (e) { if (e.status !== 401) $("#new-error").textContent = e.message; }
  });
}

// --- deleting empty queues --------------------------------------------------------------------

function showDeleteEmpty() {
  const empty = state.queues.filter((q) => q.exact && q.ready + q.claimed + q.delayed === 0);
  const mine = empty.filter((q) => q.can.manage);
  const others = empty.length - mine.length;
  const form = openDialog(`
    <h2>Delete empty queues</h2>
    ${mine.length ? `<p class="muted">Each queue is deleted only if it still holds no message when the server gets to it;
      one that received a message meanwhile is kept.</p>
    <div class="picklist" data-testid="empty-list">${mine.map((q) => `<label class="check-row">
      <input type="checkbox" value="${esc(q.store_name)}" checked data-testid="empty-pick"> ${esc(q.name)} ${doorBadge(q.door)}
      ${q.dead_letter_sources.length ? `<span class="why">dead-letter queue of ${esc(q.dead_letter_sources.join(", "))}</span>` : ""}</label>`).join("")}</div>`
      : '<p class="muted" data-testid="no-empty">No empty queue that this key may delete.</p>'}
    ${others ? `<p class="hint">${others} more empty ${others === 1 ? "queue" : "queues"} this key may not delete.</p>` : ""}
    <p class="error" id="empty-error"></p>
    <div class="row end"><button type="button" data-close>Cancel</button>
      ${mine.length ? '<button type="submit" class="danger" data-testid="empty-submit">Delete</button>' : ""}</div>`);
  const count = () => form.querySelectorAll("[data-testid=empty-pick]:checked").length;
  const label = () => { const b = form.querySelector("[data-testid=empty-submit]"); if (b) { const n = count(); b.textContent = `Delete ${n} ${n === 1 ? "queue" : "queues"}`; b.disabled = !n; } };
  form.querySelectorAll("[data-testid=empty-pick]").forEach((c) => c.addEventListener("change", label));
  label();
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const queues = [...form.querySelectorAll("[data-testid=empty-pick]:checked")].map((c) => c.value);
    try {
      const r = await api("/queues/delete-empty", { method: "POST", body: { queues } });
      closeDialog();
      const kept = r.not_empty.length ? `; kept ${r.not_empty.length} that received messages meanwhile` : "";
      toast(`Deleted ${r.deleted.length} empty ${r.deleted.length === 1 ? "queue" : "queues"}${kept}`);
      await refreshQueues(); renderQueues();
    } catch (e) { if (e.status !== 401) $("#empty-error").textContent = e.message; }
  });
}

async function refreshQueues() {
  const data = await api("/queues");
  record(data.queues, data.time);
  state.queues = data.queues;
  if (current().page === "queues") await loadRates(LIST_WINDOW, null, data.time);
  return data;
}

