"""Closing a port without resetting a connection: new handshakes are gated first.

When the last process holding a listening socket closes it, the kernel resets every connection
still waiting in its accept queue, and the clients of those connections have often sent their
request already. So whoever closes the last copy first accepts and serves what waits (a stopping
HTTP worker: :meth:`spoolq.http.gunicorn.worker.SpoolqThreadWorker._close_listeners`; the Disque
listener: :func:`spoolq.disque.server.run`). But between its last ``accept`` (the queue empty) and
its ``close`` a new handshake can complete: on a machine whose cores are busy that gap can last
milliseconds while clients reconnect, and every connection made in it was reset (HTTP: 2 in 4
stops under load).

So at a stop where nobody else keeps the socket (no systemd socket unit, no second master of a
``SIGUSR2`` upgrade), the master first gates it: a classic BPF socket filter drops every packet
that carries ``SYN`` without ``ACK``, that is every new connection attempt, and lets everything
else through (a handshake already under way completes, established connections are untouched).
A client whose ``SYN`` was dropped sends it again about a second later and is then refused at
once by the closed port, or served if the port is still open, as a client connecting to a
stopped service expects. The filter lives on the kernel's socket, shared by every process that
holds it, so it is set only at a final stop, never at a reload (the new workers serve the same
socket); it also tells the process that closes the last copy that it is the last
(:func:`is_gated`). A socket inherited at start has any filter removed (:func:`admit_new_handshakes`).

Linux only; elsewhere, or on a socket that is not TCP, these functions do nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import socket
import struct
import sys
from collections.abc import Iterator
from typing import Any

#: <linux/socket.h>: attach or remove a classic BPF program on a socket
SO_ATTACH_FILTER = 26
SO_DETACH_FILTER = 27

#: classic BPF: the byte at offset 13 of a TCP segment holds its flags (the filter of a TCP socket
#: sees the segment from its TCP header)
_TCP_FLAGS = 13
_SYN, _ACK = 0x02, 0x10
#: (code, jump if true, jump if false, k): ``ldb [13]; jset ACK -> keep; jset SYN -> drop; keep``
_DROP_BARE_SYN = (
    (0x30, 0, 0, _TCP_FLAGS),  # BPF_LD | BPF_B | BPF_ABS
    (0x45, 2, 0, _ACK),  # BPF_JMP | BPF_JSET | BPF_K: an ACK (a handshake's last step, data): keep
    (0x45, 0, 1, _SYN),  # a SYN without ACK (a new connection): drop
    (0x06, 0, 0, 0),  # BPF_RET: drop
    (0x06, 0, 0, 0xFFFFFFFF),  # BPF_RET: keep the whole segment
)


def _is_tcp(sock: socket.socket) -> bool:
    return sys.platform.startswith("linux") and sock.family in (socket.AF_INET, socket.AF_INET6) \
        and sock.type == socket.SOCK_STREAM


def refuse_new_handshakes(sock: socket.socket) -> bool:
    """Drop every new connection attempt to ``sock`` from now on (see the module doc); False when
    the filter could not be set (not Linux, not TCP, refused by the kernel)."""
    if not _is_tcp(sock):
        return False
    program = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *insn) for insn in _DROP_BARE_SYN))
    fprog = struct.pack("HL", len(_DROP_BARE_SYN), ctypes.addressof(program))  # struct sock_fprog
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    except OSError:
        return False
    return True


def is_gated(sock: socket.socket) -> bool:
    """Whether ``sock`` carries a socket filter (``SO_GET_FILTER`` answers its length)."""
    if not _is_tcp(sock):
        return False
    try:
        return len(sock.getsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, 64)) > 0  # SO_GET_FILTER: the same number
    except OSError:  # closed meanwhile: nothing to serve from it
        return False


def admit_new_handshakes(sock: socket.socket) -> None:
    """Remove a filter set by :func:`refuse_new_handshakes` (an inherited socket; none: nothing)."""
    if not _is_tcp(sock):
        return
    with contextlib.suppress(OSError):  # ENOENT: no filter
        sock.setsockopt(socket.SOL_SOCKET, SO_DETACH_FILTER, 0)


def waiting_connections(listener: Any) -> Iterator[tuple[socket.socket, Any]]:
    """Accept every connection already waiting in ``listener``'s accept queue (a socket, or a
    wrapper with its ``accept``), without blocking: ``(connection, address)`` each, until the
    queue is empty."""
    listener.setblocking(False)  # a blocking accept would hang a stop
    while True:
        try:
            yield listener.accept()
        except (BlockingIOError, InterruptedError):
            return
