"""What a Disque client that has just connected sees when the service stops: an answer, or a
refusal at connect; never a connection cut off.

The ``spoolq serve`` master keeps a copy of the Disque listening socket (for a ``SIGUSR2``
re-exec) and the Disque listener process serves it. Before this was fixed the listener stopped
accepting at a stop while the master's copy kept the port open, so connections made during the
stop waited in the accept queue and were reset when the master exited, and a connection accepted
just before the stop was closed before its first command was read (40 resets in 4 stops of 8
clients opening a new connection per ``PING``). Now the master gates the port at a final stop
(:mod:`spoolq.access.listener_gate`), the listener serves what waits in the queue, and a
connection that has sent nothing yet gets its first command answered.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.deploy.reload_load import hammer
from tests.disque.disque_server import DisqueServer

pytestmark = pytest.mark.slow


def _ping_once(port: int) -> str:
    """A new connection, one PING: ``ok``, ``refused`` or what went wrong."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            reply = s.recv(16)
    except ConnectionRefusedError:
        return "refused"
    except OSError as e:
        return f"{type(e).__name__}: {e}"
    return "ok" if reply.startswith(b"+PONG") else f"reply {reply!r}"


def test_stops_cut_no_connection_off(tmp_path: Path) -> None:
    server = DisqueServer(root=tmp_path / "root", log=tmp_path / "log")
    server.start()
    stop, outcomes = hammer(lambda: _ping_once(server.port), clients=8)
    try:
        for _ in range(3):
            time.sleep(1.0)
            server.stop()
            server.start()
    finally:
        stop()
        server.stop()
    assert outcomes["ok"] > 200 and set(outcomes) <= {"ok", "refused"}, dict(outcomes)
