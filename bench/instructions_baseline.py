"""The instruction counts of ``request_cpu_bench.py --instructions`` kept in the repository, and
the check that keeps requests from getting dearer.

    python bench/request_cpu_bench.py --instructions --write-baseline   # count, write the baseline
    python bench/request_cpu_bench.py --instructions --check-baseline   # count, compare with it

``instructions-baseline.json`` (beside this module) holds, per row of the table, the instructions
per request of the committed code, the number of requests counted (a check counts as many), the
command that wrote it, and what the counts depend on besides the code: the Python interpreter, the
C library and the version of every distribution the requests ran through (flask, werkzeug, orjson,
prometheus-client, ...). The check fails, naming each row and both counts, when a row is more than
:data:`TOLERANCE` dearer than the baseline; a row that got cheaper by as much is reported, not
failed (write the baseline again to keep the gain). When the interpreter or a library differs
from the baseline's, the counts are not comparable: the check says which and exits with
:data:`NOT_COMPARABLE` (``tests/bench`` skips then) until the baseline is written again.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: the baseline the check reads and ``--write-baseline`` writes
BASELINE = Path(__file__).resolve().with_name("instructions-baseline.json")
#: how much dearer than the baseline a row may be before the check fails
TOLERANCE = 0.03
#: requests per operation of the baseline (and so of the check): enough that each row is the same
#: within 0.5 % from run to run, few enough that the check takes about two minutes of CPU
REQUESTS = 200
#: the command that writes the baseline again
WRITE_COMMAND = ".venv/bin/python bench/request_cpu_bench.py --instructions --write-baseline"
#: exit status of a check whose baseline was counted under another interpreter or other libraries
NOT_COMPARABLE = 3


def environment(modules: list[str]) -> dict[str, Any]:
    """What instruction counts depend on besides spoolq's code: the interpreter, the C library, and
    the version of each distribution that provides one of ``modules`` (the top-level modules the
    counted process had imported), spoolq's own and the standard library's left out."""
    provides = importlib.metadata.packages_distributions()
    distributions: dict[str, str] = {}
    for module in modules:
        for dist in provides.get(module, []):
            if dist.lower().replace("_", "-") in ("spoolq", "spoolq-client", "spoolq-spark"):
                continue
            try:
                distributions[dist.lower()] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    return {
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()),
        "distributions": dict(sorted(distributions.items())),
    }


def write(path: Path, rows: dict[str, float], requests: int, env: dict[str, Any]) -> None:
    record = {
        "about": "instructions per request of bench/request_cpu_bench.py --instructions; a row more than "
                 f"{TOLERANCE:.0%} dearer fails tests/bench/test_instruction_counts.py. "
                 "When a change is meant to cost more, write this file again in the same commit.",
        "command": WRITE_COMMAND,
        "requests": requests,
        "environment": env,
        "rows": {op: round(count) for op, count in rows.items()},
    }
    path.write_text(json.dumps(record, indent=2) + "\n")


def load(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def differences(baseline: dict[str, Any], env: dict[str, Any]) -> list[str]:
    """What differs between the baseline's environment and ``env`` (empty: comparable)."""
    then = baseline.get("environment", {})
    out = [f"{key}: {then.get(key)!r} then, {env[key]!r} now"
           for key in ("python", "machine", "libc") if then.get(key) != env[key]]
    old, new = then.get("distributions", {}), env["distributions"]
    for dist in sorted(old.keys() | new.keys()):
        if old.get(dist) != new.get(dist):
            out.append(f"{dist} {old.get(dist) or 'absent'} then, {new.get(dist) or 'absent'} now")
    return out


def compare(baseline: dict[str, int], rows: dict[str, float],
            tolerance: float = TOLERANCE) -> tuple[list[str], list[str]]:
    """(the table, one line a row; the failures, one line each) of ``rows`` against ``baseline``."""
    table: list[str] = []
    failures: list[str] = []
    for op in [*baseline, *(op for op in rows if op not in baseline)]:
        then, now = baseline.get(op), rows.get(op)
        if then is None or now is None:
            failures.append(f"{op}: in the {'count' if then is None else 'baseline'} only "
                            f"(write the baseline again: {WRITE_COMMAND})")
            continue
        change = now / then - 1
        verdict = "DEARER" if change > tolerance else "cheaper" if change < -tolerance else "ok"
        table.append(f"  {op:16s} {then:>12,} {now:>12,.0f}  {change:+7.2%}  {verdict}")
        if change > tolerance:
            failures.append(f"{op}: {now:,.0f} instructions per request, {change:+.2%} against the baseline's "
                            f"{then:,} (more than {tolerance:.0%})")
    return table, failures


#: the operation (``--ops``) that counts each of the rows that come two to an operation
_OPS_OF_ROWS = {"emodb_poll10": "poll", "emodb_ack10": "poll", "sqs_receive10": "sqs_receive",
                "sqs_delete10": "sqs_receive"}


def ops_of(rows: Iterable[str]) -> str:
    """The ``--ops`` that count ``rows``."""
    return ",".join(dict.fromkeys(_OPS_OF_ROWS.get(row, row) for row in rows))


def write_and_show(path: Path, rows: dict[str, float], requests: int, env: dict[str, Any]) -> None:
    write(path, rows, requests, env)
    print(f"wrote {path}: {len(rows)} rows, {requests} requests per operation")
    for op, count in rows.items():
        print(f"  {op:16s} {count:>12,.0f}")


def check_and_show(path: Path, rows: dict[str, float], env: dict[str, Any]) -> None:
    """Print ``rows`` against the baseline at ``path``; exit 1 when a row is dearer than it allows,
    :data:`NOT_COMPARABLE` when the baseline was counted in another environment."""
    baseline = load(path)
    changed = differences(baseline, env)
    if changed:
        print(f"not comparable with {path}: counted under another interpreter or other libraries "
              f"({'; '.join(changed)}); write it again: {WRITE_COMMAND}")
        raise SystemExit(NOT_COMPARABLE)
    table, failures = compare(baseline["rows"], rows)
    print(f"instructions per request against {path} ({baseline['requests']} requests per operation; "
          f"a row fails beyond +{TOLERANCE:.0%})")
    print(f"  {'operation':16s} {'baseline':>12s} {'now':>12s}  {'change':>7s}")
    print("\n".join(table))
    if failures:
        print("dearer than the baseline:\n  " + "\n  ".join(failures))
        print(f"if the change is meant to cost more, write the baseline again in the same commit: {WRITE_COMMAND}")
        raise SystemExit(1)
