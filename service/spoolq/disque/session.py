"""One client connection's state: who it acts as, whether it authenticated, its protocol, its name,
its blocked GETJOB."""

from __future__ import annotations

import itertools

from spoolq.access.auth import Principal
from spoolq.disque.blocking import Waiter


class Session:
    _ids = itertools.count(1)

    def __init__(self, principal: Principal | None, *, authenticated: bool = False) -> None:
        self.principal = principal
        #: AUTH (or HELLO ... AUTH) succeeded, or no key is configured: the request limits of
        #: :mod:`spoolq.disque.reader` after AUTH apply, and the connection may stay idle
        self.authenticated = authenticated
        self.waiter: Waiter | None = None
        self.closed = False
        self.protocol = 2  # RESP2 until HELLO 3
        self.name: bytes | None = None  # CLIENT SETNAME
        self.id = next(Session._ids)  # CLIENT ID
