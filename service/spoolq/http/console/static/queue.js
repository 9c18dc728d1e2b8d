// One queue (#/queue/<store name>): counts, rates, settings, messages, sends, moves, deletion.
"use strict";

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
  const bigRate = (op, label, color) => {
    const h = historyOf(q.store_name, op, state.pageWindow);
    const peak = Math.max(0, ...h.filter((v) => v != null));
    return `<div class="bigrate" data-op="${op}"><div class="label">${label}</div><div class="value">${fmtRate(rateOf(q.store_name, op))}/s</div>
      ${sparkline(h, color, 300, 56, true)}<div class="axis"><span>${PAGE_WINDOWS[state.pageWindow]} ago</span><span>peak ${fmtRate(peak)}/s</span><span>now</span></div></div>`;
  };
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
    <div class="grid rates-row">
      <div class="card"><div class="section-title"><h3>Rates <small class="muted">a point every 5 s, kept by the server</small></h3>
        <div class="chips" style="padding:10px 18px 0">${Object.entries(PAGE_WINDOWS).map(([w, label]) => `<button class="chip ${+w === state.pageWindow ? "on" : ""}" data-window="${w}" data-testid="rates-window">${label}</button>`).join("")}</div></div>
        <div class="body bigrates">
        ${bigRate("send", "Sent", "var(--send)")}${bigRate("poll", "Received", "var(--recv)")}${bigRate("ack", "Acknowledged", "var(--ack)")}</div></div>
      <div class="card"><h3>Consumers</h3><div class="body" data-testid="consumers">${consumersTable(q.consumers)}</div></div>
    </div>
    <div class="grid cols-2">
      <div class="grid">
        ${settingsCardHtml(q)}
        <div class="card"><h3>Send a test message</h3><div class="body">
          <div class="row seg" role="radiogroup" aria-label="body format" data-testid="send-format">
            <label><input type="radio" name="send-format" id="send-format-json" value="json" data-testid="send-format-json" checked> JSON</label>
            <label><input type="radio" name="send-format" id="send-format-text" value="text" data-testid="send-format-text"> Text</label>
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
          <p class="hint">Purge deletes every message of the queue; it cannot be undone.</p>
          <div class="row" style="margin-top:14px"><input id="delete-confirm" data-testid="delete-confirm" placeholder="type ${esc(q.name)} to confirm" ${q.can.manage ? "" : "disabled"}>
            <button class="danger" id="delete-queue" data-testid="delete-queue" disabled>Delete queue</button> ${why("manage")}</div>
          <p class="hint">Deletes the queue and every message in it. ${q.door === "queue" || q.door === "dedupq" || q.door === "disque" ? "A client that sends to it later makes it again, empty." : "Clients then get “no such queue”."}
            ${q.dead_letter_sources.length ? `<br><span class="why" data-testid="delete-dlq-warning">This is the dead-letter queue of ${esc(q.dead_letter_sources.join(", "))}: while it is missing, they keep the messages that exceed their max receives.</span>` : ""}</p></div></div>
      </div>
      <div class="card"><div class="section-title"><h3>Messages</h3></div>
        <div class="body">
          <div class="row"><select id="peek-limit" aria-label="how many to peek"><option>10</option><option selected>20</option><option>50</option><option>200</option></select>
            <button id="peek" data-testid="peek" ${q.can.poll ? "" : "disabled"}>Peek</button>
            <span class="divider"></span>
            <select id="recv-limit" data-testid="recv-limit" aria-label="how many to receive"><option>1</option><option>5</option><option>10</option></select>
            <label class="inline">for <input id="recv-vt" data-testid="recv-vt" type="number" min="1" max="43200" value="${s.visibility_timeout}"> s</label>
            <button class="primary" id="receive" data-testid="receive" ${q.can.poll ? "" : "disabled"}>Receive</button></div>
          <p class="hint">Peek shows messages without claiming them. Receive claims them as a consumer's poll does
            (their receive count goes up) for that long; then acknowledge, release or delete each. ${why("poll")}</p>
          <div class="row"><input id="delete-id" data-testid="delete-id" placeholder="${q.door === "disque" ? "message or Disque job id" : "message id"}" ${q.can.poll ? "" : "disabled"}>
            <button id="delete-by-id" data-testid="delete-by-id" ${q.can.poll ? "" : "disabled"}>Delete by id</button></div>
          <div class="messages" id="messages" data-testid="messages">${messages || ""}</div></div></div>
    </div>`;
  wireQueueActions(q);
}

// What the Messages card shows: the last peek or receive, and what was done to each message since
// (kept across refreshes until the user leaves the queue).
function consumersTable(c) {
  if (!c.doors.length) return '<p class="muted" data-testid="no-consumers">Nobody has polled this queue since the service started.</p>';
  const what = (door) => door === "disque" ? "blocked GETJOBs" : "long polls";
  return `<table class="compact"><thead><tr><th>Door</th><th class="num">Waiting now</th><th class="num">Last poll</th></tr></thead><tbody>
    ${c.doors.map((d) => `<tr data-testid="consumer-door" data-door="${esc(d.door)}"><td>${d.door === "service" ? "console" : doorBadge(d.door)}</td>
      <td class="num" data-col="waiting">${d.waiting ? `<span class="waiting"><i></i>${fmtInt(d.waiting)} ${what(d.door)}</span>` : '<span class="zero">0</span>'}</td>
      <td class="num" data-col="last-poll" title="${d.last_poll_at ? fmtTime(d.last_poll_at) : ""}">${fmtAgo(d.last_poll_age)}</td></tr>`).join("")}</tbody></table>
    <p class="hint">A waiting poll polls again when a message comes, and at least once a second.</p>`;
}

function messagesHtml(shown, canPoll) {
  if (!shown) return "";
  if (!shown.list.length) return `<p class="muted" data-testid="no-messages">${shown.kind === "receive" ? "No message to receive right now." : "The queue has no messages to show."}</p>`;
  return shown.list.map((m) => {
    const done = shown.done[m.id];
    const mine = m.receipt && !done;
    const buttons = done ? `<span class="badge done" data-testid="msg-done">${esc(done)}</span>`
      : `${mine ? `<button class="small primary" data-msg-act="ack" data-testid="msg-ack">Acknowledge</button>
          <button class="small" data-msg-act="release" data-testid="msg-release">Release</button>` : ""}
         <button class="small danger-outline" data-msg-act="delete" data-testid="msg-delete" ${canPoll ? "" : "disabled"}>Delete</button>`;
    return `<div class="msg ${done ? "finished" : ""}" data-testid="message" data-id="${esc(m.id)}" data-state="${esc(done || (mine ? "received" : "peeked"))}">
    <header><span class="id" title="message id">${esc(m.id)}</span><span>${fmtTime(m.sent_at)}</span>
      <span>received ${m.receive_count}×</span><span>${fmtBytes(m.size)}</span>
      ${m.group_id ? `<span>group <code>${esc(m.group_id)}</code></span>` : ""}
      ${m.claimed_until && !done ? `<span class="badge claimed">${mine ? "claimed by you" : "claimed"} until ${new Date(m.claimed_until * 1000).toLocaleTimeString()}</span>` : ""}
      ${m.encoding === "base64" ? '<span class="badge">binary, base64</span>' : ""}
      <span class="msg-actions">${buttons}</span></header>
    <pre>${m.encoding === "base64" ? esc(m.body) : highlight(m.body)}</pre></div>`;
  }).join("");
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

function drawMessages(q) {
  const box = $("#messages");
  const shown = state.shown && state.shown.queue === q.store_name ? state.shown : null;
  box.innerHTML = messagesHtml(shown, q.can.poll);
  box.querySelectorAll("[data-msg-act]").forEach((b) => act(b, async () => {
    const card = b.closest("[data-testid=message]");
    const m = shown.list.find((x) => x.id === card.dataset.id);
    const base = `/queues/${encodeURIComponent(q.store_name)}`;
    const what = b.dataset.msgAct;
    if (what === "delete") {
      await api(`${base}/messages/${encodeURIComponent(m.id)}/delete`, { method: "POST", body: {} });
      shown.done[m.id] = "deleted";
    } else {
      const r = await api(`${base}/${what}`, { method: "POST", body: { receipts: [m.receipt] } });
      if (!r.done[0]) {
        shown.done[m.id] = "claim lost";
        toast("This claim is gone (it expired and the message was received again, or it was released): nothing done", true);
      } else shown.done[m.id] = what === "ack" ? "acknowledged" : "released";
    }
    await showQueue(q.store_name, true);
  }));
}

function wireQueueActions(q) {
  const name = encodeURIComponent(q.store_name);
  wireSettings(q);
  document.querySelectorAll("[data-window]").forEach((b) => b.addEventListener("click", async () => {
    state.pageWindow = +b.dataset.window;
    await showQueue(q.store_name, true);
  }));
  const show = (kind, list) => { state.shown = { queue: q.store_name, kind, list, done: {} }; drawMessages(q); };
  act($("#peek"), async () => show("peek", (await api(`/queues/${name}/messages?limit=${$("#peek-limit").value}`)).messages));
  act($("#receive"), async () => {
    const vt = parseInt($("#recv-vt").value, 10);
    const r = await api(`/queues/${name}/receive`, { method: "POST", body: { limit: parseInt($("#recv-limit").value, 10), visibility_timeout: vt > 0 ? vt : null } });
    show("receive", r.messages);
    toast(r.messages.length ? `Received ${r.messages.length} ${r.messages.length === 1 ? "message" : "messages"}` : "No message to receive right now");
  });
  act($("#delete-by-id"), async () => {
    const id = $("#delete-id").value.trim();
    if (!id) { toast("Paste a message id first", true); return; }
    await api(`/queues/${name}/messages/${encodeURIComponent(id)}/delete`, { method: "POST", body: {} });
    $("#delete-id").value = "";
    if (state.shown) state.shown.done[id] = "deleted";
    toast(`Deleted ${id.slice(0, 16)}…`);
    await showQueue(q.store_name, true);
  });
  drawMessages(q);
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
    state.shown = null; await showQueue(q.store_name, true);
  });
  $("#purge").disabled = true;
  const delConfirm = $("#delete-confirm");
  delConfirm.addEventListener("input", () => { $("#delete-queue").disabled = delConfirm.value !== q.name; });
  act($("#delete-queue"), async () => {
    await api(`/queues/${name}/delete`, { method: "POST", body: { confirm: delConfirm.value } });
    toast(`Deleted the ${DOOR_LABEL[q.door]} queue ${q.name}`);
    location.hash = "#/";
  });
  $("#delete-queue").disabled = true;
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

// Every field of the page keeps what the user typed or chose across the refresh's re-render.
function keepFields() {
  const kept = [...document.querySelectorAll("#view input[id], #view select[id], #view textarea[id]")]
    .map((el) => [el.id, el.type === "radio" || el.type === "checkbox" ? el.checked : el.value]);
  return () => {
    for (const [id, value] of kept) {
      const el = document.getElementById(id);
      if (!el || el.disabled) continue;
      if (typeof value === "boolean") el.checked = value; else el.value = value;
    }
    document.querySelectorAll("#view input[id], #view textarea[id]").forEach((el) => el.dispatchEvent(new Event("input")));
  };
}

async function showQueue(typed, keepMessages, gen = state.gen) {
  const [q, list] = await Promise.all([api(`/queues/${encodeURIComponent(typed)}`), refreshQueues()]);
  const storeName = q.store_name;  // the name typed may be the door's (orders.fifo): the page shows the full one
  if (storeName !== typed) history.replaceState(null, "", `#/queue/${encodeURIComponent(storeName)}`);
  await loadRates(state.pageWindow, storeName, list.time);
  await noPressUnderWay();
  if (gen !== state.gen) return; // the user went elsewhere meanwhile
  const restore = state.rendered === storeName ? keepFields() : null;
  const focus = document.activeElement && document.activeElement.id;
  if (!keepMessages) state.shown = null;
  renderQueue(q, "");
  state.rendered = storeName;
  if (restore) restore();
  if (focus && $("#" + focus)) $("#" + focus).focus();
}
