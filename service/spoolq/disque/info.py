"""Server commands: HELLO, CLIENT, INFO, PING, CONFIG GET, COMMAND, TIME.

``HELLO`` without arguments is Disque's (``[1, node-id, [node-id, host, port, "1"]]``); ``HELLO
<2|3> [AUTH user key] [SETNAME name]`` is Redis 6's handshake, which current Redis clients (redis-py
8 and the Disque clients built on it) send first: it authenticates (as AUTH), names the connection,
switches the connection to that protocol and answers Redis's map (server, version, proto, id, mode,
role, modules). ``CLIENT SETNAME | GETNAME | ID | SETINFO`` answer as Redis does, so the other
connection-setup commands those clients send succeed."""

from __future__ import annotations

import fnmatch
import os
import platform
import time
from collections.abc import Sequence
from typing import Any, Protocol

from spoolq import __version__
from spoolq.auth import Authenticator, Principal
from spoolq.disque import args as A
from spoolq.disque.blocking import Dispatcher
from spoolq.disque.jobs import JobCommands
from spoolq.disque.protocol import OK, Error, Map, Status, Verbatim
from spoolq.disque.session import Session
from spoolq.server_settings import Settings
from spoolq.store.contract import QueueStore


class Server(Protocol):
    """What the server commands read of the listener (:class:`spoolq.disque.door.Door`)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def store(self) -> QueueStore: ...
    @property
    def auth(self) -> Authenticator: ...
    @property
    def jobs(self) -> JobCommands: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def node_name(self) -> str: ...
    @property
    def clients(self) -> int: ...
    @property
    def started(self) -> float: ...


    def authenticate(self, session: Session, raw_key: bytes) -> Error | None: ...

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
    ("info", -1, ["readonly", "loading"]), ("hello", -1, ["readonly", "fast"]), ("config", -2, ["admin"]),
    ("client", -2, ["admin", "loading"]),
    ("command", 0, ["readonly", "loading"]), ("time", 1, ["readonly", "fast"]), ("quit", 1, ["readonly"]),
]


class Introspection:
    def __init__(self, door: Server) -> None:
        self.door = door

    def hello(self, session: Session, argv: Sequence[bytes]) -> Any:
        if len(argv) == 1:  # Disque's HELLO
            s = self.door.settings
            return [1, self.door.node_name, [self.door.node_name, s.disque_host, str(s.disque_port), "1"]]
        raw = A.text(argv[1])
        if not raw.isdigit():
            raise Error("Protocol version is not an integer or out of range")
        if int(raw) not in (2, 3):
            raise Error("unsupported protocol version", "NOPROTO")
        name: bytes | None = None
        i = 2
        while i < len(argv):
            option = A.text(argv[i]).lower()
            if option == "auth" and i + 2 < len(argv):
                failed = self.door.authenticate(session, argv[i + 2])
                if failed is not None:
                    return failed  # as Redis: a failed AUTH leaves the protocol as it was
                i += 3
            elif option == "setname" and i + 1 < len(argv):
                name = _client_name(argv[i + 1])
                i += 2
            else:
                raise Error(f"Syntax error in HELLO option '{A.text(argv[i])[:32]}'")
        session.protocol = int(raw)
        if name is not None:
            session.name = name
        return Map([("server", "spoolq"), ("version", __version__), ("proto", session.protocol),
                    ("id", session.id), ("mode", "standalone"), ("role", "master"), ("modules", [])])

    def client(self, session: Session, argv: Sequence[bytes]) -> Any:
        sub = A.text(argv[1]).lower()
        if sub == "setname" and len(argv) == 3:
            session.name = _client_name(argv[2])
            return OK
        if sub == "getname" and len(argv) == 2:
            return session.name
        if sub == "id" and len(argv) == 2:
            return session.id
        if sub == "setinfo" and len(argv) == 4:
            if A.text(argv[2]).lower() not in ("lib-name", "lib-ver"):
                raise Error(f"Unrecognized option '{A.text(argv[2])[:32]}'")
            return OK
        raise Error(f"unknown subcommand or wrong number of arguments for '{A.text(argv[1])[:32]}'. "
                    "Try CLIENT SETNAME, GETNAME, ID or SETINFO.")

    def ping(self, who: Principal, argv: Sequence[bytes]) -> Any:
        if len(argv) > 2:
            return Error("wrong number of arguments for 'ping' command")
        return argv[1] if len(argv) == 2 else Status("PONG")

    def time(self, who: Principal, argv: Sequence[bytes]) -> list[Any]:
        now = time.time()
        return [str(int(now)), str(int((now % 1) * 1_000_000))]

    def config(self, who: Principal, argv: Sequence[bytes]) -> Map:
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
        return Map([(k, v) for k, v in values.items() if fnmatch.fnmatchcase(k, pattern)])

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
            return Map([])
        raise Error(f"unknown subcommand '{A.text(argv[1])[:32]}'. Try COMMAND HELP.")

    def info(self, who: Principal, argv: Sequence[bytes]) -> Verbatim:
        door = self.door
        wanted = A.text(argv[1]).lower() if len(argv) > 1 else "default"
        queues = door.jobs.known_queues(refresh=True)
        jobs_in, jobs_out = door.jobs.totals()
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
            "stats": [("jobs_in", jobs_in), ("jobs_out", jobs_out)],
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
        return Verbatim(("\r\n".join(lines) + "\r\n").encode() if lines else b"")


def _client_name(raw: bytes) -> bytes:
    if any(c <= 32 or c > 126 for c in raw):
        raise Error("Client names cannot contain spaces, newlines or special characters.")
    return raw
