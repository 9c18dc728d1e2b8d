"""The gate a final stop sets on the HTTP and Disque listeners (:mod:`spoolq.access.listener_gate`): new
connection attempts are dropped, what is already connected or waiting to be accepted is not, and a
client that tried meanwhile is refused once the port closes; a socket inherited at start is
ungated."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.access.listener_gate import admit_new_handshakes, is_gated, refuse_new_handshakes
from spoolq.cli.listen_sockets import inherited_sockets
from spoolq.settings.server import load_settings


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock
    sock.close()


def _connect(port: int, timeout: float) -> socket.socket:
    client = socket.socket()
    client.settimeout(timeout)
    client.connect(("127.0.0.1", port))
    return client


def test_a_gated_listener_drops_new_connections_and_keeps_the_others(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    established = _connect(port, 5)
    served, _ = listener.accept()
    waiting = _connect(port, 5)  # in the accept queue
    waiting.sendall(b"GET / HTTP/1.1\r\n\r\n")

    assert refuse_new_handshakes(listener) and is_gated(listener)

    with pytest.raises(TimeoutError):
        _connect(port, 0.5)
    established.sendall(b"still here")
    assert served.recv(64) == b"still here"
    accepted, _ = listener.accept()
    assert accepted.recv(64) == b"GET / HTTP/1.1\r\n\r\n"
    for s in (established, served, waiting, accepted):
        s.close()


def test_a_client_that_tried_while_gated_is_refused_once_the_port_closes(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    refuse_new_handshakes(listener)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            _connect(port, 10).close()
            outcome.append(None)
        except OSError as e:
            outcome.append(e)

    started = time.monotonic()
    client = threading.Thread(target=attempt)
    client.start()
    time.sleep(0.3)  # its first SYN was dropped
    listener.close()
    client.join(15)
    assert len(outcome) == 1 and isinstance(outcome[0], ConnectionRefusedError), outcome
    assert time.monotonic() - started < 5  # the retried SYN, about a second after the first


def test_admitting_removes_the_gate_and_is_harmless_without_one(listener: socket.socket) -> None:
    admit_new_handshakes(listener)  # no filter: nothing happens
    refuse_new_handshakes(listener)
    admit_new_handshakes(listener)
    assert not is_gated(listener)
    _connect(listener.getsockname()[1], 5).close()


def test_other_sockets_are_left_alone() -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        assert not refuse_new_handshakes(unix)
        admit_new_handshakes(unix)


def test_a_listener_inherited_at_start_is_ungated(listener: socket.socket, tmp_path: Path) -> None:
    """A socket handed on by a SIGUSR2 re-exec (or systemd) is served ungated, whatever the
    process before did to it."""
    refuse_new_handshakes(listener)
    fd = os.dup(listener.fileno())
    settings = load_settings({"root": tmp_path / "root"}, environ={})
    sockets, _settings = inherited_sockets(settings, {"GUNICORN_FD": str(fd), "GUNICORN_PID": "1"})
    assert sockets is not None and sockets.source == "re-exec"
    try:
        assert not is_gated(listener)
    finally:
        sockets.close()
