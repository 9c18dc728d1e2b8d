// The topics page (#/topics): every SNS topic the key may see, its subscriptions and filter
// policies, and its rates (published, delivered, filtered out, failed), computed here from the
// totals the server returns every two seconds; a publish form per topic.
"use strict";

// --- topics -----------------------------------------------------------------------------------

const topicSamples = [];  // [{now, totals: {store_name: {published, ...}}}], the last two refreshes

function topicRate(name, outcome) {
  if (topicSamples.length < 2) return 0;
  const [a, b] = topicSamples.slice(-2);
  const x = (a.totals[name] || {})[outcome] || 0, y = (b.totals[name] || {})[outcome] || 0;
  return b.now > a.now ? Math.max(0, (y - x) / (b.now - a.now)) : 0;
}

function subscriptionRow(s) {
  const where = s.queue ? `<a href="${queueHref(s.queue)}">${esc(s.endpoint)}</a>` : esc(s.endpoint);
  const policy = s.filter_policy
    ? `<code class="mono" title="${esc(s.filter_policy_scope)}">${esc(s.filter_policy)}</code> <small class="muted">${esc(s.filter_policy_scope)}</small>`
    : '<span class="muted">every message</span>';
  return `<tr data-testid="subscription-row">
    <td>${esc(s.protocol)}${s.raw ? ' <span class="badge kind">raw</span>' : ""}${s.pending ? ' <span class="badge kind">pending</span>' : ""}</td>
    <td class="mono">${where}</td><td>${policy}</td>
    <td class="mono">${s.dead_letter ? esc(s.dead_letter) : '<span class="muted">–</span>'}</td></tr>`;
}

async function showTopics(gen = state.gen) {
  const data = await api("/topics");
  await noPressUnderWay();
  if (gen !== state.gen) return;
  topicSamples.push({ now: data.now, totals: Object.fromEntries(data.topics.map((t) => [t.store_name, t.totals])) });
  if (topicSamples.length > 2) topicSamples.shift();
  const rate = (t, o) => fmtRate(topicRate(t.store_name, o));
  const cards = data.topics.map((t) => `
    <div class="card" data-testid="topic" data-topic="${esc(t.store_name)}">
      <h3>${esc(t.name)} <span class="badge kind">${esc(t.kind)}</span> <small class="muted">${esc(t.region)}</small>
        <button class="small" data-publish="${esc(t.arn)}" data-fifo="${t.kind === "sns-fifo"}" data-testid="publish">Publish…</button></h3>
      <div class="body">
        <div class="sub mono">${esc(t.arn)}</div>
        <div class="tiles">
          <div class="tile"><div class="label">Published/s</div><div class="value">${rate(t, "published")}</div></div>
          <div class="tile"><div class="label">Delivered/s</div><div class="value">${rate(t, "delivered")}</div></div>
          <div class="tile"><div class="label">Filtered out/s</div><div class="value">${rate(t, "filtered")}</div></div>
          <div class="tile ${t.totals.failed ? "bad" : ""}"><div class="label">Failed (total)</div><div class="value" data-testid="topic-failed">${fmtInt(t.totals.failed)}</div></div>
          <div class="tile"><div class="label">Published (total)</div><div class="value" data-testid="topic-published">${fmtInt(t.totals.published)}</div></div>
        </div>
        ${t.subscriptions.length ? `<table data-testid="subscriptions"><thead><tr><th>Protocol</th><th>Endpoint</th><th>Filter policy</th><th>Dead-letter queue</th></tr></thead>
          <tbody>${t.subscriptions.map(subscriptionRow).join("")}</tbody></table>`
          : '<div class="empty">No subscriptions.</div>'}
      </div></div>`).join("");
  $("#view").innerHTML = `
    <div class="pagehead"><div><h1>Topics</h1><div class="sub">SNS topics and the queues they fan out to (publish with <code>spoolq publish</code> or any SNS client).</div></div></div>
    ${cards || '<div class="card empty" data-testid="no-topics">No topics yet. Create one with <code>aws sns create-topic</code> or in the config file.</div>'}`;
  $("#view").querySelectorAll("[data-publish]").forEach((b) => b.addEventListener("click", () => showPublish(b.dataset.publish, b.dataset.fifo === "true")));
}

// --- publishing (the SNS door itself: POST / with Action=Publish and the key as X-BV-API-Key) ----

async function publishToTopic(fields) {
  const headers = { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers["X-BV-API-Key"] = key;
  const form = new URLSearchParams({ Action: "Publish", Version: "2010-03-31", ...fields });
  let res;
  try { res = await fetch("/", { method: "POST", headers, body: form }); }
  catch (e) { throw new ApiError(0, "the server cannot be reached"); }
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, (data && data.Error && `${data.Error.Code}: ${data.Error.Message}`) || `HTTP ${res.status}`);
  return data.PublishResponse.PublishResult;
}

function showPublish(arn, fifo) {
  const form = openDialog(`
    <h2>Publish to ${esc(arn.split(":").pop())}</h2>
    <label class="field">Message<textarea id="pub-message" data-testid="pub-message" rows="5" required></textarea></label>
    <label class="field">Subject (optional)<input id="pub-subject" autocomplete="off"></label>
    <label class="field">Message attributes (optional, one NAME=VALUE a line; NAME:Number=VALUE for a number)
      <textarea id="pub-attributes" data-testid="pub-attributes" rows="3" spellcheck="false"></textarea></label>
    ${fifo ? `<label class="field">Message group id<input id="pub-group" required></label>
      <label class="field">Deduplication id (unless the topic deduplicates by content)<input id="pub-dedup"></label>` : ""}
    <p class="error" id="pub-error" data-testid="pub-error"></p>
    <div class="row end"><button type="button" data-close>Cancel</button>
      <button type="submit" class="primary" data-testid="pub-submit">Publish</button></div>`);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fields = { TopicArn: arn, Message: $("#pub-message").value };
    if ($("#pub-subject").value.trim()) fields.Subject = $("#pub-subject").value.trim();
    const lines = $("#pub-attributes").value.split("\n").map((l) => l.trim()).filter(Boolean);
    for (const [i, line] of lines.entries()) {
      const at = line.indexOf("=");
      if (at < 1) { $("#pub-error").textContent = `"${line}": give NAME=VALUE`; return; }
      const [name, type] = line.slice(0, at).split(":");
      Object.assign(fields, { [`MessageAttributes.entry.${i + 1}.Name`]: name,
        [`MessageAttributes.entry.${i + 1}.Value.DataType`]: type || "String",
        [`MessageAttributes.entry.${i + 1}.Value.StringValue`]: line.slice(at + 1) });
    }
    if (fifo) {
      fields.MessageGroupId = $("#pub-group").value.trim();
      if ($("#pub-dedup").value.trim()) fields.MessageDeduplicationId = $("#pub-dedup").value.trim();
    }
    try {
      const done = await publishToTopic(fields);
      closeDialog();
      toast(`Published ${done.MessageId}`);
    } catch (e) { $("#pub-error").textContent = e.message; }
  });
}
