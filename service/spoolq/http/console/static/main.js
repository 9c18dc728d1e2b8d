// Routing by URL fragment and the two-second refresh; loaded last.
"use strict";

// --- routing and refresh ----------------------------------------------------------------------

function current() {  // the page the URL fragment names
  const h = location.hash.replace(/^#/, "") || "/";
  if (h.startsWith("/queue/")) return { page: "queue", name: decodeURIComponent(h.slice(7)) };
  if (h === "/server") return { page: "server" };
  if (h === "/topics") return { page: "topics" };
  return { page: "queues" };
}

async function tick(first) {
  const r = current(), gen = state.gen;
  try {
    if (r.page === "queues") { await refreshQueues(); await noPressUnderWay(); if (gen === state.gen) renderQueues(); }
    else if (r.page === "queue") { if (first || !isTyping()) await showQueue(r.name, !first, gen); }
    else if (r.page === "topics") await showTopics(gen);
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
  document.querySelectorAll("[data-nav]").forEach((a) => a.classList.toggle("active", a.dataset.nav === (["server", "topics"].includes(r.page) ? r.page : "queues")));
  if (r.page !== "queue") state.shown = null;
  state.editing = null;
  state.gen += 1;
  clearInterval(state.timer);
  tick(true);
  state.timer = setInterval(() => { if (!document.hidden && $("#login").hidden && !dialogOpen()) tick(false); }, REFRESH_MS);
}

window.addEventListener("hashchange", () => { state.shown = null; route(); });
loadSession().then(route);

