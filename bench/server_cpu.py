"""CPU time of a server's processes, for benchmarks that report CPU per request next to rates.

A server started with ``start_new_session=True`` leads a process group of its own (gunicorn's
master and workers, LocalStack, moto); :func:`group_cpu` adds up the user and system time of
its live members from ``/proc``. The difference over a cell, divided by the requests or messages
of the cell, is what one costs the server: it moves far less with the machine's load than a
rate does (a loaded machine still inflates it somewhat: caches and cores are shared).

:func:`group_cpu` sees only live processes. A program that starts and ends processes while it
is measured (Spark's JVM runs short-lived Python planners; its Python daemon forks workers)
needs :func:`process_table` and :func:`tree_cpu`: each process counts its own time plus the
time of its children that have ended and been reaped (``cutime``/``cstime``, which already hold
their reaped descendants), so a tree's sum is its CPU time, ended members included, as long as
every member is reaped inside the tree. :func:`machine_busy_cpu` is what every program on the
machine used, from ``/proc/stat``. :func:`thread_waits` is how long threads were ready to run
but had no core (the scheduler's run-queue wait): CPU a program wanted and did not get, because
other programs had the cores.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

_TICK = os.sysconf("SC_CLK_TCK")


def _proc_stats() -> Iterator[tuple[int, list[str]]]:
    """Each live process's id and the fields of its ``/proc/<pid>/stat`` after the name: state,
    ppid, pgrp, ..., utime (index 11), stime (12), cutime (13), cstime (14)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        yield int(entry), stat.rsplit(")", 1)[1].split()


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) of the live processes of process group ``pgid``."""
    return sum(int(f[11]) + int(f[12]) for _pid, f in _proc_stats() if int(f[2]) == pgid) / _TICK


def own_cpu() -> float:
    """CPU seconds (user + system) this process has used."""
    t = os.times()
    return t.user + t.system


@dataclass(frozen=True)
class ProcessTable:
    """One pass over ``/proc``: each process's parent and its CPU ticks, reaped children included."""

    parent: dict[int, int]
    ticks: dict[int, int]


def process_table() -> ProcessTable:
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for pid, fields in _proc_stats():
        parent[pid] = int(fields[1])
        ticks[pid] = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return ProcessTable(parent, ticks)


def subtree(table: ProcessTable, root: int) -> set[int]:
    """``root`` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for pid, ppid in table.parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in table.ticks and pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def tree_cpu(table: ProcessTable, pids: set[int]) -> float:
    """CPU seconds (user + system) of ``pids`` and of their reaped children."""
    return sum(table.ticks[pid] for pid in pids) / _TICK


def machine_busy_cpu() -> float:
    """CPU seconds every core of the machine has spent busy since boot (all but idle, iowait, steal)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in f.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / _TICK


def thread_waits(pids: set[int]) -> dict[tuple[int, int], int]:
    """Nanoseconds each live thread of ``pids`` has spent runnable but waiting for a core (``schedstat``).

    Keyed by (pid, thread id): compare two readings thread by thread; a thread that ended between
    them takes its waiting with it (there is no reaped-children total for this one).
    """
    waits: dict[tuple[int, int], int] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    waits[(pid, int(tid))] = int(f.read().split()[1])
            except (OSError, IndexError):
                continue
    return waits


def waited_between(before: dict[tuple[int, int], int], after: dict[tuple[int, int], int]) -> float:
    """Seconds of waiting for a core between two :func:`thread_waits` readings (threads started since count whole)."""
    return sum(ns - before.get(key, 0) for key, ns in after.items()) / 1e9
