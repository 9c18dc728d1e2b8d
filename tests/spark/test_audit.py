"""The audit pipeline on a generated archive of 100,000 messages, checked against plain Python,
and its HTML report rendered in headless Chromium with the figures read back from the page."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]  # a loaded 2-core box starts Spark slowly

N = 100_000
BASE = 1_790_000_000.0  # an hour boundary is at BASE - BASE % 3600
DLQ = {"jobs-dlq": "jobs"}


def generate_archive(root: Path) -> list[dict[str, Any]]:
    rnd = random.Random(7)
    records = []
    for i in range(N):
        queue = rnd.choices(["jobs", "mail", "jobs-dlq"], [6, 3, 1])[0]
        sent = BASE + rnd.uniform(0, 6 * 3600)
        first = sent + rnd.expovariate(1 / 2.0)
        acked = first + rnd.expovariate(1 / 5.0)
        rc = 1 if rnd.random() < 0.9 else rnd.randint(2, 5)
        records.append({"queue": queue, "id": f"{i:040x}", "body": json.dumps({"i": i}),
                        "body_base64": "", "attributes": {}, "sent_at": round(sent, 3),
                        "first_received_at": round(first, 3), "acked_at": round(acked, 3), "receive_count": rc})
    for q in ("jobs", "mail", "jobs-dlq"):
        mine = [r for r in records if r["queue"] == q]
        (root / "archive" / q).mkdir(parents=True)
        for k in range(4):  # several segments per queue, as compaction writes them
            part = mine[k::4]
            (root / "archive" / q / f"{k:013d}-seg.jsonl").write_text(
                "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in part))
    return records


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (what Spark's ``percentile`` does)."""
    v = sorted(values)
    pos = (len(v) - 1) * p
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def expected(records: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, float]]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["queue"], int(r["acked_at"] // 3600) * 3600)].append(r)
    out: dict[tuple[str, int], dict[str, float]] = {}
    for key, rs in groups.items():
        recv = [r["first_received_at"] - r["sent_at"] for r in rs]
        ack = [r["acked_at"] - r["sent_at"] for r in rs]
        fig = {"acked": len(rs), "redelivered": sum(r["receive_count"] > 1 for r in rs),
               "redeliveries": sum(r["receive_count"] - 1 for r in rs), "dead_lettered": 0}
        for p in (50, 95, 99):
            fig[f"receive_p{p}"] = percentile(recv, p / 100)
            fig[f"ack_p{p}"] = percentile(ack, p / 100)
        out[key] = fig
    for (queue, hour), fig in list(out.items()):
        if queue in DLQ:
            src = out.setdefault((DLQ[queue], hour), {"acked": 0, "redelivered": 0, "redeliveries": 0,
                                                      "dead_lettered": 0})
            src["dead_lettered"] = fig["acked"]
    return out


class Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str, str], str] = {}
        self._at: tuple[str, str, str] | None = None
        self.svgs: list[dict[str, str | None]] = []
        self.bars = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "td" and "data-col" in a:
            self._at = (a["data-queue"] or "", a["data-hour"] or "", a["data-col"] or "")
        if tag == "svg":
            self.svgs.append(a)
        if tag == "rect" and a.get("class") == "bar":
            self.bars += 1

    def handle_data(self, data: str) -> None:
        if self._at is not None:
            self.cells[self._at] = self.cells.get(self._at, "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._at = None


def chromium_dom(page: Path, tmp: Path) -> str:
    if subprocess.run(["scripts/system-deps", "chromium"], capture_output=True).returncode != 0 \
            or shutil.which("chromium") is None:
        pytest.skip("chromium is not installed (scripts/system-deps chromium needs root)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'chromium'}"]
    shot = tmp / "report.png"
    subprocess.run(["chromium", *flags, f"--screenshot={shot}", "--window-size=1200,2000", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 10_000  # something was drawn
    done = subprocess.run(["chromium", *flags, "--dump-dom", page.as_uri()],
                          capture_output=True, timeout=120, check=True, text=True)
    return done.stdout


def test_audit_matches_plain_python_and_the_report_shows_it(spark: Any, tmp_path: Path) -> None:
    from spoolq_spark.pipelines.audit import FIGURES, run_audit

    records = generate_archive(tmp_path / "root")
    want = expected(records)
    summary = run_audit(spark, str(tmp_path / "root"), str(tmp_path / "out"), dead_letter=DLQ)
    assert summary["acked"] == N and summary["rows"] == len(want)

    got = spark.read.parquet(str(tmp_path / "out" / "audit.parquet")).selectExpr(
        "queue", "cast(hour AS long) AS hour", *FIGURES).collect()
    assert {(r.queue, r.hour) for r in got} == set(want)
    for r in got:
        w = want[(r.queue, r.hour)]
        for col in FIGURES:
            if col in w:
                assert getattr(r, col) == pytest.approx(w[col], abs=1e-9), (r.queue, r.hour, col)
            else:
                assert getattr(r, col) is None

    dom = chromium_dom(tmp_path / "out" / "report.html", tmp_path)
    page = Cells()
    page.feed(dom)
    assert len(page.svgs) == 2 * 3 and page.bars == len(want)
    import datetime as dt
    for (queue, hour), w in want.items():
        label = dt.datetime.fromtimestamp(hour, dt.UTC).strftime("%Y-%m-%d %H:00")
        for col in FIGURES:
            shown = page.cells[(queue, label, col)]
            if col not in w:
                assert shown == "-"
            elif col.startswith(("receive_p", "ack_p")):
                assert float(shown) == pytest.approx(w[col], abs=0.0006), (queue, label, col)
            else:
                assert int(shown) == w[col], (queue, label, col)
    assert f'<span id="grand-total">{N}</span>' in dom
