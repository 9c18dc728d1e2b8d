"""The claims a process made and has not ended yet, for acks by message id
(:mod:`spoolq.store.claiming`).

An ack by id (EmoDB, Disque) names a message, not the claimed file; a claim this process made is
acked through the file it remembers, without a listing of the claim shard. This table is only a
shortcut: every use of an entry checks the file it names, and a claim not (or no longer)
remembered is found by listing its shard.
"""

from __future__ import annotations

#: claims a process remembers (about 500 bytes each with a short data directory path: 8 MB when full)
REMEMBERED_CLAIMS = 16_384


class RememberedClaims:
    """The claims this process made that have not ended here yet, for acks by id: message id ->
    the claimed file this process last made for it (see :mod:`spoolq.store.claiming`).

    An entry goes as soon as its claim ends through this process, whatever the door: acked by id or
    by receipt, released (a nack, a visibility of 0, ``unclaim_all``), renamed by a renewal (then
    the new name is kept), or dropped as a second copy. A claim that ends elsewhere (it expires,
    another process acks it) leaves its entry until the table is full: at
    :data:`REMEMBERED_CLAIMS` entries the older half is forgotten (their acks by id list their
    shard, as for a claim made elsewhere). Forgetting is never wrong, only slower: every use of an
    entry checks the file it names. Threads share the table without a lock (each step is one
    dictionary operation; an entry lost to a race is forgotten, nothing more)."""

    def __init__(self, limit: int = REMEMBERED_CLAIMS) -> None:
        self._claims: dict[str, str] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._claims)

    def remember(self, mid: str, claimed: str) -> None:
        claims = self._claims
        if len(claims) >= self._limit:  # insertion order is age: keep the newer half
            kept = list(claims.items())  # one C-level copy: other threads may change the table meanwhile
            claims = self._claims = dict(kept[len(kept) // 2:])
        claims[mid] = claimed

    def take(self, mid: str) -> str | None:
        """The claimed file remembered for ``mid``, forgotten (its claim is being ended)."""
        return self._claims.pop(mid, None)

    def renamed(self, mid: str, before: str, after: str) -> None:
        """The claimed file ``before`` of ``mid`` is called ``after`` now (a renewal)."""
        if self._claims.get(mid) == before:
            self._claims[mid] = after

    def forget_queue(self, queue_path: str) -> None:
        """Forget every claim in the queue at ``queue_path`` (all its claims were released)."""
        inside = queue_path + "/claimed/"
        for mid, claimed in list(self._claims.items()):
            if claimed.startswith(inside):
                self._claims.pop(mid, None)
