"""What the Disque door reports to Prometheus, written where ``/metrics`` reads it.

The listener is a process of its own next to gunicorn's workers. ``spoolq serve`` chooses the
prometheus-client multiprocess directory (``PROMETHEUS_MULTIPROC_DIR``) before it starts the
listener, which inherits it, so the listener's samples land in the same directory as the
workers' and any worker's ``/metrics`` adds them up (see :mod:`spoolq.observability.metrics`).

* every command answered counts once in ``spoolq_commands_total{door="disque",command,result}``
  and ``spoolq_command_seconds{door="disque",command}`` (from the request's turn to its reply;
  pipelined ADDJOBs written as one store batch each count the batch's time);
* ``command`` is the upper-cased name from the door's command table (``ADDJOB``, ``GETJOB``,
  ``ACKJOB``, ...); a name the door does not know counts as ``unknown``, so clients cannot
  create label values;
* ``result`` is ``ok``, ``auth`` (``-NOAUTH`` / ``-NOPERM``) or ``error`` (any other error reply);
* messages are counted from the store's events, as for the HTTP doors
  (:class:`spoolq.observability.counting.DoorCounts` with ``door="disque"``, :func:`count_messages`): ADDJOB as
  ``send``, jobs GETJOB delivered as ``poll``, ACKJOB / FASTACK / DELJOB removals as ``ack``,
  also per store queue (``disque:<name>``), and the listener process's group-commit flushes;
* a GETJOB blocked waiting for jobs counts in ``spoolq_long_polls_waiting{door="disque"}`` and in
  ``spoolq_queue_polls_waiting{queue,door="disque"}`` of each queue it waits on.

A connection's protocol error (answered, then the connection closed) is not a command and is
not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from spoolq.disque.protocol import Error
from spoolq.observability.counting import DoorCounts
from spoolq.observability.metrics import Metrics
from spoolq.store.contract import QueueStore

DOOR = "disque"
UNKNOWN = "unknown"
#: error codes that mean "refused by authentication or permission"
AUTH_CODES = frozenset({"NOAUTH", "NOPERM"})


class CommandMeter:
    def __init__(self, metrics: Metrics, names: Iterable[str]) -> None:
        self.metrics = metrics
        metrics.long_poll_doors(DOOR)
        # request name as sent (any case) -> label; filled lazily, only with known names
        self._known = {n.lower(): n.upper() for n in names}
        self._labels: dict[bytes, str] = {}

    def label(self, name: bytes) -> str:
        """The ``command`` label of a request's first word: known names upper-cased, else ``unknown``."""
        label = self._labels.get(name)
        if label is None:
            label = self._known.get(name.decode("utf-8", "replace").lower(), UNKNOWN)
            if label != UNKNOWN and len(self._labels) < 4096:  # the spellings clients use, bounded
                self._labels[name] = label
        return label

    def record(self, label: str, reply: Any, seconds: float) -> None:
        if not isinstance(reply, Error):
            self.metrics.command(DOOR, label, "ok", seconds)
        else:
            self.metrics.command(DOOR, label, "auth" if reply.code in AUTH_CODES else "error", seconds)

    def waiting(self, queues: Iterable[str] = ()) -> Any:
        """Context manager: one GETJOB blocked on ``queues`` (store names) while it runs."""
        return self.metrics.waiting(DOOR, queues)


def count_messages(store: QueueStore, metrics: Metrics) -> Callable[[], None]:
    """Count every send, poll, ack and flush of ``store`` for the Disque door (the listener's
    store serves no other door); returns what stops it."""
    return store.subscribe(DoorCounts(metrics, DOOR))
