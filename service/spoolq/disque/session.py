"""One client connection's state: who it acts as, its protocol, its name, its blocked GETJOB."""

from __future__ import annotations

import itertools

from spoolq.auth import Principal
from spoolq.disque.blocking import Waiter


class Session:
    _ids = itertools.count(1)

    def __init__(self, principal: Principal | None) -> None:
        self.principal = principal
        self.waiter: Waiter | None = None
        self.closed = False
        self.protocol = 2  # RESP2 until HELLO 3
        self.name: bytes | None = None  # CLIENT SETNAME
        self.id = next(Session._ids)  # CLIENT ID
