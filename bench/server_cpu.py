"""CPU time of a server's processes, for benchmarks that report CPU per request next to rates.

A server started with ``start_new_session=True`` leads a process group of its own (gunicorn's
master and workers, LocalStack, moto); :func:`group_cpu` adds up the user and system time of
its live members from ``/proc``. The difference over a cell, divided by the requests or messages
of the cell, is what one costs the server: it moves far less with the machine's load than a
rate does (a loaded machine still inflates it somewhat: caches and cores are shared).
"""

from __future__ import annotations

import os

_TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) of the live processes of process group ``pgid``."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # after the name: state, ppid, pgrp, ..., utime (index 11), stime (12)
            total += int(fields[11]) + int(fields[12])
    return total / _TICK


def own_cpu() -> float:
    """CPU seconds (user + system) this process has used."""
    t = os.times()
    return t.user + t.system
