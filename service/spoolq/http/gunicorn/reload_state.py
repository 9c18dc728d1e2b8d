"""Whether the config in force is the one on disk: the outcome of the start and of the last reload,
kept by ``spoolq serve``'s master and shown by every worker (``/readyz``, ``/metrics``).

A reload (``SIGHUP``) that finds a mistake changes nothing but this state: the workers keep
serving with the config they have (:mod:`spoolq.http.gunicorn.arbiter`). So that an operator sees it
without reading the log, the master writes the state to ``config-reload.json`` in the service's
runtime directory (the Prometheus multiprocess directory, ``PROMETHEUS_MULTIPROC_DIR``, which
the master and every worker share; replaced atomically by a rename), and every worker reads it:

* ``/readyz`` (its ``config`` part): ``{"reload": "ok" | "failed", "in_force_since": <unix time>,
  "last_attempt": <unix time>, "problems": [...]}``; a failed reload does not make the node
  unready: it serves, with the config it had;
* ``/metrics`` (:class:`ReloadStateCollector`): ``spoolq_config_reload_success`` (1: the last
  start or reload applied the whole file; 0: it was refused, or a part of it could not be
  applied) and ``spoolq_config_last_reload_success_timestamp_seconds`` (when the config in
  force was accepted), as Prometheus reports its own reloads.

Without that directory (the app built by tests or ``flask run``) there is no state to show.
This module is imported by the master before it chooses the metrics directory, so it imports
nothing of prometheus-client at import (its mode is fixed by the first import).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

STATE_FILE = "config-reload.json"
#: problems kept in the state (and shown by /readyz); the log has them all
MAX_PROBLEMS = 20


@dataclass(frozen=True)
class ReloadState:
    """The outcome of the start or the last reload."""

    ok: bool
    in_force_since: float  # when the config in force was accepted (at start, or by a reload)
    last_attempt: float  # when the start or the last reload happened
    problems: tuple[str, ...] = ()  # what was refused or could not be applied

    @classmethod
    def started(cls, refused: Sequence[str] = (), now: float | None = None) -> ReloadState:
        """At start: the config was accepted (``refused``: declared queues that could not be applied)."""
        at = time.time() if now is None else now
        return cls(not refused, at, at, tuple(refused[:MAX_PROBLEMS]))

    def applied(self, refused: Sequence[str] = (), now: float | None = None) -> ReloadState:
        """A reload that put the new config in force."""
        return ReloadState.started(refused, now)

    def failed(self, problems: Sequence[str], now: float | None = None) -> ReloadState:
        """A reload refused (or fallen back): the config in force stays the one it was."""
        return replace(self, ok=False, last_attempt=time.time() if now is None else now,
                       problems=tuple(problems[:MAX_PROBLEMS]))

    def details(self) -> dict[str, Any]:
        """The ``config`` part of ``/readyz``."""
        return {"reload": "ok" if self.ok else "failed", "in_force_since": round(self.in_force_since, 3),
                "last_attempt": round(self.last_attempt, 3), "problems": list(self.problems)}

    def write(self, directory: str | None = None) -> None:
        """Publish the state for the workers (nothing without a runtime directory)."""
        where = directory or multiprocess_dir()
        if where is None:
            return
        path = Path(where) / STATE_FILE
        tmp = path.with_name(f".{STATE_FILE}.{os.getpid()}")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(asdict(self)))
            os.replace(tmp, path)

    @classmethod
    def read(cls, directory: str | None = None) -> ReloadState | None:
        """The state the master published (None: none, or unreadable)."""
        where = directory or multiprocess_dir()
        if where is None:
            return None
        try:
            data = json.loads((Path(where) / STATE_FILE).read_text())
            return cls(bool(data["ok"]), float(data["in_force_since"]), float(data["last_attempt"]),
                       tuple(str(p) for p in data.get("problems", ())))
        except (OSError, ValueError, KeyError, TypeError):
            return None


def multiprocess_dir() -> str | None:
    """The runtime directory shared by the master and its workers (see the module doc)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class ReloadStateCollector:
    """``/metrics``: the two gauges of the published state (none when there is none)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        state = ReloadState.read()
        if state is None:
            return
        yield GaugeMetricFamily("spoolq_config_reload_success",
                                "1: the last start or reload of the config file applied it whole; 0: it was "
                                "refused (the config in force is the one before) or a part could not be applied",
                                value=1.0 if state.ok else 0.0)
        yield GaugeMetricFamily("spoolq_config_last_reload_success_timestamp_seconds",
                                "Unix time the config in force was accepted (at start or by a reload)",
                                value=state.in_force_since)
