// The server page (#/server): this node, its storage and flushes.
"use strict";

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
  await noPressUnderWay();
  if (gen !== state.gen) return;
  const tile = (label, value, id) => `<div class="tile"><div class="label">${label}</div><div class="value" ${id ? `data-testid="${id}"` : ""}>${value}</div></div>`;
  // files the file system refuses (EIO: on GlusterFS, a split-brain), each with what resolves it
  const damaged = (s.damaged || []).map((d) => `<li><span class="mono">${esc(d.path)}</span> (${esc(d.what)}, last ${fmtTime(d.last_seen)}): ${esc(d.fix)}</li>`).join("");
  $("#view").innerHTML = `
    <div class="pagehead"><div><h1>Server</h1><div class="sub">This node of the service.</div></div></div>
    ${damaged ? `<div class="card" data-testid="server-damaged"><h3>Files the file system refuses</h3><div class="body"><ul>${damaged}</ul></div></div>` : ""}
    <div class="tiles">
      ${tile("Node", esc(s.node), "server-node")}${tile("Version", `${esc(s.version)} <small>format ${esc(String(s.format))}</small>`)}
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

