"""Server commands: HELLO, INFO, PING, CONFIG GET, COMMAND, TIME."""

from __future__ import annotations

import fnmatch
import os
import platform
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spoolq import __version__
from spoolq.disque import args as A
from spoolq.disque.protocol import Error, Status
from spoolq.http.auth import Principal

if TYPE_CHECKING:
    from spoolq.disque.server import Door

#: COMMAND's reply: name, arity, flags, first key, last key, step (as Disque's table)
TABLE: list[tuple[str, int, list[str]]] = [
    ("addjob", -4, ["write", "denyoom", "fast"]), ("getjob", -2, ["write", "fast"]),
    ("getjobs", -2, ["write", "fast"]), ("ackjob", -1, ["write", "fast"]), ("fastack", -1, ["write", "fast"]),
    ("deljob", -1, ["write", "fast"]), ("show", 2, ["readonly", "fast"]), ("qlen", 2, ["readonly", "fast"]),
    ("qpeek", 3, ["readonly"]), ("qstat", 2, ["readonly", "fast"]), ("qscan", -1, ["readonly"]),
    ("jscan", -1, ["readonly"]), ("scanqueues", -1, ["readonly"]), ("scanjobs", -1, ["readonly"]),
    ("enqueue", -1, ["write", "fast"]), ("queue", -1, ["write", "fast"]), ("nack", -1, ["write", "fast"]),
    ("dequeue", -1, ["write", "fast"]), ("working", 2, ["write", "fast"]), ("pause", -3, ["readonly", "fast"]),
    ("auth", -2, ["readonly", "loading", "fast"]), ("ping", -1, ["readonly", "fast"]),
    ("info", -1, ["readonly", "loading"]), ("hello", 1, ["readonly", "fast"]), ("config", -2, ["admin"]),
    ("command", 0, ["readonly", "loading"]), ("time", 1, ["readonly", "fast"]), ("quit", 1, ["readonly"]),
]


class Introspection:
    def __init__(self, door: Door) -> None:
        self.door = door

    def hello(self, who: Principal, argv: Sequence[bytes]) -> list[Any]:
        if len(argv) > 1 and argv[1] != b"2":  # a Redis 6+ client asking for RESP3
            raise Error("unsupported protocol version: this Disque door speaks RESP2", "NOPROTO")
        s = self.door.settings
        return [1, self.door.node_name, [self.door.node_name, s.disque_host, str(s.disque_port), "1"]]

    def ping(self, who: Principal, argv: Sequence[bytes]) -> Any:
        if len(argv) > 2:
            return Error("wrong number of arguments for 'ping' command")
        return argv[1] if len(argv) == 2 else Status("PONG")

    def time(self, who: Principal, argv: Sequence[bytes]) -> list[Any]:
        now = time.time()
        return [str(int(now)), str(int((now % 1) * 1_000_000))]

    def config(self, who: Principal, argv: Sequence[bytes]) -> list[Any]:
        sub = A.text(argv[1]).lower()
        if sub != "get":
            raise Error(f"CONFIG {A.text(argv[1])[:32]} is not supported: spoolq is configured by "
                        "`spoolq serve` flags and SPOOLQ_* environment variables")
        if len(argv) != 3:
            raise Error("wrong number of arguments for CONFIG GET")
        s = self.door.settings
        values = {"port": str(s.disque_port), "bind": s.disque_host, "dir": str(s.root),
                  "appendonly": "yes", "appendfsync": "always" if s.fsync else "no",
                  "requirepass": "" if self.door.auth.open else "(api keys)", "node-id": s.node_id,
                  "maxclients": "10000", "proto-max-bulk-len": str(s.max_body_bytes)}
        pattern = A.text(argv[2]).lower()
        out: list[Any] = []
        for k, v in values.items():
            if fnmatch.fnmatchcase(k, pattern):
                out += [k, v]
        return out

    def command(self, who: Principal, argv: Sequence[bytes]) -> Any:
        sub = A.text(argv[1]).lower() if len(argv) > 1 else ""
        rows = [[name, arity, flags, 0, 0, 0] for name, arity, flags in TABLE]
        if sub == "":
            return rows
        if sub == "count":
            return len(rows)
        if sub == "info":
            wanted = {A.text(a).lower() for a in argv[2:]}
            return [next((r for r in rows if r[0] == w), None) for w in wanted]
        if sub == "docs":
            return []
        raise Error(f"unknown subcommand '{A.text(argv[1])[:32]}'. Try COMMAND HELP.")

    def info(self, who: Principal, argv: Sequence[bytes]) -> bytes:
        door = self.door
        wanted = A.text(argv[1]).lower() if len(argv) > 1 else "default"
        queues = door.jobs.known_queues(refresh=True)
        sections: dict[str, list[tuple[str, Any]]] = {
            "server": [("disque_version", f"spoolq-{__version__}"), ("os", f"{platform.system()} {platform.release()}"),
                       ("process_id", os.getpid()), ("tcp_port", door.settings.disque_port),
                       ("uptime_in_seconds", int(time.time() - door.started)),
                       ("uptime_in_days", int(time.time() - door.started) // 86400),
                       ("node_id", door.node_name), ("store_root", str(door.settings.root))],
            "clients": [("connected_clients", door.clients),
                        ("blocked_clients", door.dispatcher.total_blocked())],
            "jobs": [("registered_jobs", sum(door.store.counts(q).total for q in queues))],
            "queues": [("registered_queues", len(queues))],
            "persistence": [("loading", 0), ("aof_enabled", 1),
                            ("appendfsync", "always" if door.settings.fsync else "no"),
                            ("replication", "delegated to the file system")],
            "stats": [("jobs_in", sum(s.jobs_in for s in door.jobs.stats.values())),
                      ("jobs_out", sum(s.jobs_out for s in door.jobs.stats.values()))],
        }
        names = list(sections) if wanted in ("default", "all", "everything") else [wanted]
        lines: list[str] = []
        for name in names:
            if name not in sections:
                continue
            if lines:
                lines.append("")
            lines.append(f"# {name.capitalize()}")
            lines += [f"{k}:{v}" for k, v in sections[name]]
        return ("\r\n".join(lines) + "\r\n").encode() if lines else b""
