// A queue's settings card: shown, and edited through the settings API every door shares
// (GET/POST /queue/1/<store name>/_settings, /dedupq/1/<name>/_settings for dedup queues; see
// spoolq.queues.queue_settings). The server checks every value and changes nothing when one is refused;
// its message is shown under the form.
"use strict";

const DURATION_UNITS = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

function fmtSetting(seconds) {  // 2592000 -> "30d", 90 -> "90s": the largest unit that divides it
  if (!seconds || !Number.isInteger(seconds)) return `${seconds}s`;
  for (const u of ["w", "d", "h", "m"]) if (seconds % DURATION_UNITS[u] === 0) return `${seconds / DURATION_UNITS[u]}${u}`;
  return `${seconds}s`;
}
function parseSetting(text, label) {  // "90", "90s", "15m", "12h", "30d", "2w" -> seconds
  const m = /^\s*(\d+)\s*([smhdw])?\s*$/.exec(text);
  if (!m) throw new ApiError(400, `${label}: write a number of seconds, or a number with s, m, h, d or w (like 15m or 14d)`);
  return parseInt(m[1], 10) * DURATION_UNITS[m[2] || "s"];
}

function settingsPath(q) {
  return q.door === "dedupq" ? `/dedupq/1/${encodeURIComponent(q.name)}/_settings`
    : `/queue/1/${encodeURIComponent(q.store_name)}/_settings`;
}

async function settingsCall(q, body) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers["X-BV-API-Key"] = key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(settingsPath(q), { method: body === undefined ? "GET" : "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) { throw new ApiError(0, "the server cannot be reached"); }
  const text = await res.text();
  let data = null;
  try { data = JSON.parse(text); } catch (e) { /* the door's errors are text */ }
  if (!res.ok) {
    const why = (data && (data.message || data.reason)) || text || `HTTP ${res.status}`;
    throw new ApiError(res.status, res.status === 403 ? `refused: this key may not change this queue's settings (${why})` : why);
  }
  return data;
}

// Dead-letter queues the server would take: not the queue itself, same FIFO-ness, and for an SQS
// queue an SQS queue of the same account and region.
function deadLetterChoices(q, current) {
  const sqsScope = (n) => n.split(":").slice(0, 3).join(":");
  const fifo = q.kind === "sqs-fifo";
  const fit = state.queues.filter((o) => o.store_name !== q.store_name && (o.kind === "sqs-fifo") === fifo
    && (q.door !== "sqs" || (o.door === "sqs" && sqsScope(o.store_name) === sqsScope(q.store_name))));
  const names = fit.map((o) => [o.store_name, `${o.name} (${DOOR_LABEL[o.door]})`]);
  if (current && !names.some(([n]) => n === current)) names.unshift([current, current]);
  return names;
}

function settingsCardHtml(q) {
  const s = q.settings;
  const editing = state.editing && state.editing.queue === q.store_name ? state.editing.values : null;
  const head = `<div class="section-title"><h3>Settings</h3>${editing ? "" : `<div style="padding:10px 18px 0">
    <button class="small" id="settings-edit" data-testid="settings-edit" ${q.can.manage ? "" : "disabled"}
      title="${q.can.manage ? "Change this queue's settings" : `this key may not ${q.door === "sqs" ? "administer" : "poll"} on this queue`}">Edit</button></div>`}</div>`;
  if (!editing) {
    return `<div class="card">${head}<div class="body"><dl class="settings" data-testid="settings">
      <dt>Visibility timeout</dt><dd>${fmtDuration(s.visibility_timeout)}</dd>
      <dt>Delivery delay</dt><dd>${fmtDuration(s.delay)}</dd>
      <dt>Retention</dt><dd>${fmtDuration(s.retention)}</dd>
      <dt>Max message size</dt><dd>${fmtBytes(s.max_message_bytes)}</dd>
      <dt>Receive wait</dt><dd>${fmtDuration(s.receive_wait)}</dd>
      <dt>Dead-letter queue</dt><dd data-testid="settings-dlq">${q.dead_letter ? `<a href="${queueHref(q.dead_letter.queue)}">${esc(q.dead_letter.queue)}</a> after ${q.dead_letter.max_receives} receives` : "none"}</dd>
      <dt>FIFO</dt><dd>${s.fifo ? `yes${s.content_based_dedup ? " (content-based dedup)" : ""}` : "no"}</dd>
      <dt>Archive</dt><dd data-testid="settings-archive">${s.archive ? `on, kept ${fmtDuration(s.archive_retention)}` : "off"}</dd>
      ${Object.keys(q.tags).length ? `<dt>Tags</dt><dd>${Object.entries(q.tags).map(([k, v]) => `<code>${esc(k)}=${esc(v)}</code>`).join(" ")}</dd>` : ""}
    </dl></div></div>`;
  }
  const v = editing;
  const dl = v.dead_letter;
  const field = (id, label, value, hint) => `<label class="field">${label}
    <input id="set-${id}" data-testid="set-${id}" value="${esc(value)}" autocomplete="off"><span class="hint">${hint}</span></label>`;
  return `<div class="card editing">${head}<form class="body settings-form" id="settings-form" data-testid="settings-form" novalidate>
    <div class="grid cols-2 tight">
      ${field("visibility", "Visibility timeout", fmtSetting(v.visibility_timeout), "how long a receive claims a message")}
      ${field("delay", "Delivery delay", fmtSetting(v.delay), "new messages stay hidden this long")}
      ${field("retention", "Retention", fmtSetting(v.retention), "unconsumed messages are dropped after")}
      ${field("wait", "Receive wait", fmtSetting(v.receive_wait), "long-poll wait of a receive that names none")}
      ${field("max-bytes", "Max message size (bytes)", String(v.max_message_bytes), fmtBytes(v.max_message_bytes))}
    </div>
    <fieldset><legend>Dead-letter queue (redrive policy)</legend>
      <div class="row"><select id="set-dlq" data-testid="set-dlq"><option value="">none</option>
        ${deadLetterChoices(q, dl && dl.queue).map(([n, label]) => `<option value="${esc(n)}" ${dl && dl.queue === n ? "selected" : ""}>${esc(label)}</option>`).join("")}</select>
        <label class="inline">after <input id="set-max-receives" data-testid="set-max-receives" type="number" min="1" value="${dl ? dl.max_receives : 5}"> receives</label></div>
      <span class="hint">A message received that many times goes to the dead-letter queue on its next receive.</span></fieldset>
    <fieldset><legend>Archive</legend>
      <div class="row"><label class="check-row"><input type="checkbox" id="set-archive" data-testid="set-archive" ${v.archive ? "checked" : ""}> Keep acknowledged messages</label>
        <label class="inline">for <input id="set-archive-retention" data-testid="set-archive-retention" value="${esc(fmtSetting(v.archive_retention))}"></label></div>
      <span class="hint">For <code>spoolq pipeline audit</code>. Durations: 90s, 15m, 12h, 14d, 2w.</span></fieldset>
    <p class="error" id="settings-error" data-testid="settings-error"></p>
    <div class="row end"><button type="button" id="settings-cancel" data-testid="settings-cancel">Cancel</button>
      <button type="submit" class="primary" data-testid="settings-save">Save settings</button></div>
  </form></div>`;
}

function wireSettings(q) {
  const edit = $("#settings-edit");
  if (edit) act(edit, async () => {
    state.editing = { queue: q.store_name, values: await settingsCall(q) };
    await showQueue(q.store_name, true);
  });
  const form = $("#settings-form");
  if (!form) return;
  $("#settings-cancel").addEventListener("click", async () => { state.editing = null; await showQueue(q.store_name, true); });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const was = state.editing.values;
    const err = $("#settings-error");
    err.textContent = "";
    try {
      const now = {
        visibility_timeout: parseSetting($("#set-visibility").value, "Visibility timeout"),
        delay: parseSetting($("#set-delay").value, "Delivery delay"),
        retention: parseSetting($("#set-retention").value, "Retention"),
        receive_wait: parseSetting($("#set-wait").value, "Receive wait"),
        max_message_bytes: parseSetting($("#set-max-bytes").value, "Max message size"),
        archive: $("#set-archive").checked,
        archive_retention: parseSetting($("#set-archive-retention").value, "Archive retention"),
        dead_letter: $("#set-dlq").value ? { queue: $("#set-dlq").value, max_receives: parseInt($("#set-max-receives").value, 10) } : null,
      };
      const changes = {};
      for (const [k, value] of Object.entries(now)) if (JSON.stringify(value) !== JSON.stringify(was[k])) changes[k] = value;
      if (!Object.keys(changes).length) { state.editing = null; toast("Nothing changed"); await showQueue(q.store_name, true); return; }
      await settingsCall(q, changes);
      state.editing = null;
      toast(`Settings saved: ${Object.keys(changes).map((k) => k.replace(/_/g, " ")).join(", ")}`);
      await showQueue(q.store_name, true);
    } catch (e) { if (e.status !== 401) err.textContent = e.message; }
  });
}
