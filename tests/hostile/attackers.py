"""Hostile HTTP clients, in a process of their own: idle connections and slowloris connections, held open.

    python -m tests.hostile.attackers --port 8480 --idle 2000 --slowloris 500 --seconds 60

* **idle**: a TCP connection that connects and never sends a byte;
* **slowloris**: a connection that starts a request (its request line and a header) and then sends
  one more byte of an endless header every second, so that its request head is never complete.

Both are *held open*: a connection the server closes (or refuses) is opened again at once, as an
attacker would, at most :data:`REOPENS_PER_SECOND` a second in all. One thread, one selector,
non-blocking sockets; the soft limit on open files is raised to the hard one. Runs in its own
process so that its work does not slow the test's own client (the GIL).

It prints ``holding`` once every connection it wants is connected (or after 10 s), and when done
(``--seconds``, or ``SIGTERM``) one JSON line: how many connections it opened, how many the server closed,
and how many were open (connected, or still connecting) each second (``held``: the smallest of
those after the first seconds, ``open_mean``).
"""

from __future__ import annotations

import argparse
import errno
import json
import resource
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass

REOPENS_PER_SECOND = 10_000
#: what a slowloris connection sends at once, then one byte of an endless header a second
SLOW_START = b"POST /queue/1/slow/send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Slow: "


@dataclass
class Conn:
    kind: str  # "idle" or "slow"
    sock: socket.socket
    connected: bool = False
    sent_start: bool = False


class Attackers:
    def __init__(self, port: int, idle: int, slow: int) -> None:
        self.port, self.want = port, {"idle": idle, "slow": slow}
        self.sel = selectors.DefaultSelector()
        self.conns: dict[int, Conn] = {}
        self.opened = self.closed_by_server = self.failed_connects = 0
        self.to_open: list[str] = ["idle"] * idle + ["slow"] * slow

    def open(self, kind: str) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex(("127.0.0.1", self.port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            self.failed_connects += 1
            self.to_open.append(kind)
            return
        c = Conn(kind, s, connected=err == 0)
        self.conns[s.fileno()] = c
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
        self.opened += 1

    def drop(self, c: Conn, by_server: bool) -> None:
        self.sel.unregister(c.sock)
        del self.conns[c.sock.fileno()]
        c.sock.close()
        if by_server:
            self.closed_by_server += 1
        else:
            self.failed_connects += 1
        self.to_open.append(c.kind)

    def event(self, c: Conn, mask: int) -> None:
        if not c.connected and mask & selectors.EVENT_WRITE:
            err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.drop(c, by_server=False)
                return
            c.connected = True
            self.sel.modify(c.sock, selectors.EVENT_READ, c)
            if c.kind == "slow":
                self.send(c, SLOW_START)
                c.sent_start = True
            return
        if mask & selectors.EVENT_READ:
            try:
                data = c.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:  # closed by the server (with or without an answer first)
                self.drop(c, by_server=True)
            # an answer (408, 503): the server closes next; read until it does

    def send(self, c: Conn, data: bytes) -> None:
        try:
            c.sock.send(data)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.drop(c, by_server=True)

    def run(self, seconds: float) -> dict[str, object]:
        resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
        start = time.monotonic()
        next_tick = start
        open_counts: list[int] = []
        holding = False
        stop: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, _frame: stop.append(signum))
        while time.monotonic() - start < seconds and not stop:
            if not holding and (sum(c.connected for c in self.conns.values()) >= sum(self.want.values())
                                or time.monotonic() - start > 10):
                print("holding", flush=True)
                holding = True
            budget = REOPENS_PER_SECOND // 20
            while self.to_open and budget > 0:
                self.open(self.to_open.pop(0))
                budget -= 1
            for key, mask in self.sel.select(timeout=0.05):
                c = key.data
                if c.sock.fileno() in self.conns:
                    self.event(c, mask)
            now = time.monotonic()
            if now >= next_tick:
                next_tick += 1.0
                open_counts.append(len(self.conns))
                for c in [c for c in self.conns.values() if c.kind == "slow" and c.sent_start]:
                    self.send(c, b"a")
        for c in list(self.conns.values()):
            c.sock.close()
        steady = open_counts[3:] or open_counts
        return {"opened": self.opened, "closed_by_server": self.closed_by_server,
                "failed_connects": self.failed_connects, "held": min(steady),
                "open_mean": round(sum(steady) / len(steady)), "wanted": sum(self.want.values())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--idle", type=int, default=2000)
    p.add_argument("--slowloris", type=int, default=500)
    p.add_argument("--seconds", type=float, default=60.0)
    a = p.parse_args()
    print(json.dumps(Attackers(a.port, a.idle, a.slowloris).run(a.seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
