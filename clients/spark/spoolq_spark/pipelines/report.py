"""The audit's HTML report: one self-contained file (inline CSS and SVG, no script, no network).

For each queue: a bar chart of messages acknowledged per hour, a line chart of the send-to-ack
p50/p95/p99 per hour, and a table of every figure. Table cells carry ``data-queue``,
``data-hour`` and ``data-col`` attributes so the numbers can be checked by a machine too.
Seconds are printed with 3 decimals.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from typing import Any

from spoolq_spark.pipelines.figures import FIGURES

W, H, PAD = 720, 220, 40
COLOURS = {"ack_p50": "#2b8a3e", "ack_p95": "#e8590c", "ack_p99": "#c92a2a"}

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin-top:1em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}
th{background:#f1f3f5} td.h{text-align:left}
svg{background:#fafafa;border:1px solid #eee;margin:.5em 0}
.legend span{margin-right:1em}
"""


def fmt(col: str, value: Any) -> str:
    if value is None:
        return "-"
    if col.startswith(("receive_p", "ack_p")):
        return f"{float(value):.3f}"
    return str(int(value))


def hour_text(hour: Any) -> str:
    if isinstance(hour, dt.datetime):
        return hour.strftime("%Y-%m-%d %H:00")
    return str(hour)


def _bars(values: Sequence[float], labels: Sequence[str], queue: str) -> str:
    n = max(1, len(values))
    top = max(values, default=0) or 1
    bw = (W - 2 * PAD) / n
    parts = [f'<svg class="chart acked" data-queue="{html.escape(queue)}" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="acknowledged per hour">',
             f'<text x="{PAD}" y="16" font-size="12">acknowledged per hour (max {int(top)})</text>',
             f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#888"/>']
    for i, (v, label) in enumerate(zip(values, labels, strict=True)):
        h = (H - 2 * PAD) * v / top
        x = PAD + i * bw
        parts.append(f'<rect class="bar" x="{x + 1:.1f}" y="{H - PAD - h:.1f}" width="{max(1.0, bw - 2):.1f}" '
                     f'height="{h:.1f}" fill="#1971c2"><title>{html.escape(label)}: {int(v)}</title></rect>')
    if labels:
        parts.append(f'<text x="{PAD}" y="{H - PAD + 16}" font-size="11">{html.escape(labels[0])}</text>')
        parts.append(f'<text x="{W - PAD}" y="{H - PAD + 16}" font-size="11" text-anchor="end">'
                     f'{html.escape(labels[-1])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _lines(rows: Sequence[dict[str, Any]], queue: str) -> str:
    series = {c: [float(r[c]) if r[c] is not None else None for r in rows] for c in COLOURS}
    top = max((v for vals in series.values() for v in vals if v is not None), default=0) or 1
    n = len(rows)
    step = (W - 2 * PAD) / max(1, n - 1)
    parts = [f'<svg class="chart latency" data-queue="{html.escape(queue)}" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="send to ack seconds">',
             f'<text x="{PAD}" y="16" font-size="12">send to ack, seconds (max {top:.3f})</text>',
             f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#888"/>']
    for col, colour in COLOURS.items():
        pts = [f"{PAD + i * step:.1f},{H - PAD - (H - 2 * PAD) * v / top:.1f}"
               for i, v in enumerate(series[col]) if v is not None]
        if len(pts) == 1:
            x, y = pts[0].split(",")
            parts.append(f'<circle class="{col}" cx="{x}" cy="{y}" r="3" fill="{colour}"/>')
        elif pts:
            parts.append(f'<polyline class="{col}" points="{" ".join(pts)}" fill="none" '
                         f'stroke="{colour}" stroke-width="2"/>')
    parts.append("</svg>")
    legend = "".join(f'<span style="color:{c}">&#9632; {k.replace("ack_", "")}</span>' for k, c in COLOURS.items())
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def _table(rows: Sequence[dict[str, Any]], queue: str) -> str:
    q = html.escape(queue)
    head = "".join(f"<th>{c}</th>" for c in ("hour (UTC)", *FIGURES))
    body = []
    for r in rows:
        h = html.escape(hour_text(r["hour"]))
        cells = "".join(f'<td data-queue="{q}" data-hour="{h}" data-col="{c}">{fmt(c, r[c])}</td>' for c in FIGURES)
        body.append(f'<tr><td class="h">{h}</td>{cells}</tr>')
    return f'<table class="figures" data-queue="{q}"><tr>{head}</tr>{"".join(body)}</table>'


def render_report(rows: Sequence[dict[str, Any]], *, title: str = "spoolq audit", source: str = "") -> str:
    """The whole HTML document for the audit rows (dicts with ``queue``, ``hour`` and FIGURES)."""
    by_queue: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: (r["queue"], hour_text(r["hour"]))):
        by_queue.setdefault(r["queue"], []).append(r)
    total = sum(int(r["acked"]) for r in rows)
    sections = []
    for queue, qrows in by_queue.items():
        labels = [hour_text(r["hour"]) for r in qrows]
        acked = sum(int(r["acked"]) for r in qrows)
        sections.append(
            f'<section data-queue="{html.escape(queue)}"><h2>{html.escape(queue)}</h2>'
            f'<p class="total" data-queue="{html.escape(queue)}">{acked} acknowledged over {len(qrows)} hours</p>'
            f'{_bars([float(r["acked"]) for r in qrows], labels, queue)}{_lines(qrows, queue)}'
            f'{_table(qrows, queue)}</section>')
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>'
            f'<p>Source: {html.escape(source)}. <span id="grand-total">{total}</span> messages acknowledged, '
            f'{len(by_queue)} queues. Times are seconds; hours are UTC, by acknowledgement time.</p>'
            f'{"".join(sections)}</body></html>')
