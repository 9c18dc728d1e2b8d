"""gunicorn's master, with a reload that cannot take the service down.

**Checked before anything changes.** On ``SIGHUP`` the master first checks the config file and
the TLS files whole, as ``spoolq check-config`` does (:func:`spoolq.config.check.check`). With any
mistake it changes nothing: every mistake is logged at ERROR, the workers keep serving with the
config they have, and the failure is published (:mod:`spoolq.http.gunicorn.reload_state`: ``/readyz``,
``spoolq_config_reload_success 0``). Otherwise it logs what changed (identities, declared queues,
TLS files; never a secret), holds the new config and TLS context for the workers it forks
(:func:`spoolq.settings.config_file.hold`, :func:`spoolq.access.tls.hold_server_context`) and starts new workers.

**Handed over, not dropped.** gunicorn's own reload forks the new workers and sends the old ones
``SIGTERM`` at once. An old worker stops accepting at that moment, while a new one accepts only
once it has imported and built the app (``preload_app`` is off: each worker builds its own store
after the fork, and a reload is how new code is loaded). For that whole boot time nobody accepts:
on a machine whose cores are busy that is several seconds. :class:`HandoverArbiter` waits, inside
the reload, until every new worker reports that it has built the app (:func:`report_ready`,
gunicorn's ``post_worker_init`` hook, writes its pid to a pipe the master reads), and only then
stops the old ones. If the new workers have not reported within gunicorn's worker ``timeout``,
the old ones are stopped anyway (as gunicorn would).

**A new worker that fails to boot** (new code on disk that does not import, a resource it cannot
get) makes gunicorn halt the whole service (``HaltServer: 'Worker failed to boot.'``). Here, while
any worker that booted still serves, it does not: during a reload the new workers are stopped,
the old ones keep serving with the config they had (held again), and the reload is reported as
failed with the worker's reason (:func:`report_boot_failure`); a worker replaced outside a reload
(one that died) that fails to boot is tried again after :data:`BOOT_RETRY_SECONDS`. Only when no
worker serves at all (at start) does the service halt, as gunicorn does. The declared queues of
the new config are applied once the new workers serve (:mod:`spoolq.config.declared_queues`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import ssl
import struct
import time
from collections.abc import Callable
from typing import Any

from gunicorn.arbiter import Arbiter
from gunicorn.errors import HaltServer

from spoolq.access.listener_gate import refuse_new_handshakes
from spoolq.config.check import ConfigCheck, check, describe_changes
from spoolq.http.gunicorn.reload_state import ReloadState
from spoolq.settings.config_file import hold
from spoolq.settings.server import Settings, SettingsError

#: the pipe's write end, in the master and in every worker it forks (-1: no handover master)
_ready_fd = -1
#: one report: the worker's pid and the length of the reason that follows (0: it is ready)
_REPORT = struct.Struct("=iH")
_MAX_REASON = 1000  # bytes: a report stays one atomic pipe write (under PIPE_BUF)
#: seconds before a worker that failed to boot outside a reload is started again
BOOT_RETRY_SECONDS = 10.0


def report_ready(worker: Any) -> None:
    """gunicorn hook ``post_worker_init`` (in a worker, once its app is built): tell the master."""
    _report(b"")


def report_boot_failure(error: BaseException) -> None:
    """In a worker whose app failed to build: tell the master why, before gunicorn exits it."""
    _report(f"{type(error).__name__}: {error}".encode("utf-8", "replace")[:_MAX_REASON])


def _report(reason: bytes) -> None:
    if _ready_fd >= 0:
        with contextlib.suppress(OSError):
            os.write(_ready_fd, _REPORT.pack(os.getpid(), len(reason)) + reason)


class _FellBack(Exception):
    """Raised out of gunicorn's reload once its new workers were stopped (see the module doc)."""


class HandoverArbiter(Arbiter):  # type: ignore[misc]
    def __init__(self, app: Any) -> None:
        global _ready_fd
        super().__init__(app)
        self._ready_read, _ready_fd = os.pipe()  # close-on-exec: a re-exec makes its own
        os.set_blocking(self._ready_read, False)
        self._ready: set[int] = set()
        self._reports = b""
        self._boot_failures: dict[int, str] = {}  # pid -> why (reported by the worker)
        self._handover_after: int | None = None  # during a reload: the age of the last old worker
        self._reloading = False
        self._respawn_after = 0.0  # no worker is started before this (monotonic) time
        self.settings: Settings = app.settings
        #: the listening sockets outlive this master (systemd's socket unit keeps them)
        self.listeners_kept_elsewhere: bool = getattr(app, "listeners_kept_elsewhere", False)
        #: called at a graceful stop where this master holds the last copies of its listeners
        self.on_final_stop: Callable[[], None] | None = getattr(app, "on_final_stop", None)
        self.accepted: ConfigCheck = app.accepted or check(self.settings)
        self.state: ReloadState = app.reload_state or ReloadState.started()
        self._tls: ssl.SSLContext | None = self._hold(self.accepted) if self.accepted.ok else None
        self.state.write()

    # --- the reload ---------------------------------------------------------------------------

    def reload(self) -> None:
        verdict = check(self.settings)
        if not verdict.ok:
            self._refuse(verdict.problems, "the config has mistakes; spoolq check-config lists the same")
            return
        changes = describe_changes(self.accepted, verdict)
        self.log.info("reload: %s", "; ".join(changes) if changes else "the config file and TLS files are unchanged")
        previous, previous_tls = self.accepted, self._tls
        try:
            tls = self._hold(verdict)
        except (OSError, ssl.SSLError, SettingsError) as e:  # a TLS file changed between the check and now
            self._hold(previous, previous_tls)
            self._refuse([f"tls: {e}"], "the TLS files cannot be loaded")
            return
        self._handover_after = self.worker_age
        self._boot_failures.clear()
        self._reloading = True
        try:
            super().reload()  # forks the new workers, then calls manage_workers (below)
        except _FellBack:
            self._hold(previous, previous_tls)
            failures = dict.fromkeys(f"a new worker failed to boot: {why}" for why in self._boot_failures.values())
            self._refuse(list(failures), "new workers failed to boot; they were stopped")
            return
        finally:
            self._handover_after = None
            self._reloading = False
            self._boot_failures.clear()
        self.accepted, self._tls = verdict, tls
        self.state = self.state.applied(self._apply_declared_queues())
        self.state.write()

    def _hold(self, verdict: ConfigCheck, tls: ssl.SSLContext | None = None) -> ssl.SSLContext | None:
        """Make ``verdict``'s config, and ``tls`` (held before) or a TLS context built from the files
        now, what the workers forked from now on serve with; the TLS context held."""
        if self.settings.config is not None and verdict.config is not None:
            hold(self.settings.config, verdict.config)
        if self.settings.certfile is None:
            return None
        from spoolq.access.tls import hold_server_context

        return hold_server_context(self.settings, tls)

    def _refuse(self, problems: list[str], summary: str) -> None:
        for problem in problems:
            self.log.error("reload refused: %s", problem)
        self.log.error("reload refused (%s): the workers keep serving with the config they have; reload again "
                       "once it is fixed", summary)
        self.state = self.state.failed(problems or [summary])
        self.state.write()

    def _apply_declared_queues(self) -> list[str]:
        """The config file's declared queues and SNS topics, applied; the lines of what was not."""
        from spoolq.config.declared_queues import apply_from_settings
        from spoolq.config.declared_topics import apply_topics_from_settings

        refused = apply_from_settings(self.settings, self.log.info, self.log.error)
        return refused + apply_topics_from_settings(self.settings, self.log.info, self.log.error)

    # --- the stop -----------------------------------------------------------------------------

    def stop(self, graceful: bool = True) -> None:
        """gunicorn's stop; a graceful one where nobody else keeps the listening sockets first
        drops new connection attempts to them (:mod:`spoolq.access.listener_gate`), so the
        worker that closes the last copy resets nothing; the application is told (its other
        listeners, the Disque door's, are gated when their turn comes)."""
        if graceful and self._holds_the_last_copies():
            for listener in self.LISTENERS:
                refuse_new_handshakes(listener.sock)
            if self.on_final_stop is not None:
                self.on_final_stop()
        super().stop(graceful)

    def _holds_the_last_copies(self) -> bool:
        """Whether only this master and its workers hold the listening sockets: not handed over to
        or from another master (``SIGUSR2``), not kept by systemd (gunicorn's test for unlinking a
        Unix socket at its stop, and spoolq's own for a socket systemd passed)."""
        return (self.reexec_pid == self.master_pid == 0 and not self.systemd and not self.cfg.reuse_port
                and not self.listeners_kept_elsewhere)

    # --- the handover -------------------------------------------------------------------------

    def manage_workers(self) -> None:
        if self._handover_after is not None:
            last_old, self._handover_after = self._handover_after, None
            self._await_new_workers(last_old)
        super().manage_workers()  # stops the oldest workers beyond the configured number

    def _await_new_workers(self, last_old: int) -> None:
        """Block until every worker younger than ``last_old`` has reported ready (or gunicorn's
        worker timeout passed); if one failed to boot, stop them all and raise :class:`_FellBack`."""
        deadline = time.monotonic() + max(float(self.timeout or 0), 30.0)
        while time.monotonic() < deadline:
            self._read_reports()
            self.reap_workers()
            new = [pid for pid, w in self.WORKERS.items() if w.age > last_old]
            if self._boot_failures:
                self._stop_new_workers(new)
                raise _FellBack()
            if all(pid in self._ready for pid in new):
                return
            select.select([self._ready_read], [], [], 0.1)
        self.log.warning("new workers did not report ready in time; stopping the old ones anyway")

    def _stop_new_workers(self, pids: list[int]) -> None:
        """SIGTERM (a graceful stop: any that booted finish what they serve), then wait for them
        to exit; SIGKILL what is left after gunicorn's graceful timeout."""
        for pid in pids:
            self.kill_worker(pid, signal.SIGTERM)
        deadline = time.monotonic() + float(self.cfg.graceful_timeout)
        while any(pid in self.WORKERS for pid in pids):
            if time.monotonic() > deadline:
                for pid in pids:
                    self.kill_worker(pid, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.05)
            self.reap_workers()

    # --- boot failures ------------------------------------------------------------------------

    def reap_workers(self) -> None:
        """gunicorn's reaping, where a worker that failed to boot halts the service only when no
        worker that booted serves (see the module doc)."""
        while True:
            self._read_reports()
            before = set(self.WORKERS)
            try:
                super().reap_workers()
                return
            except HaltServer as e:
                if e.exit_status not in (self.WORKER_BOOT_ERROR, self.APP_LOAD_ERROR):
                    raise
                gone = before - set(self.WORKERS)
                self._ready -= gone
                serving = len(self._ready & set(self.WORKERS))
                if not serving:
                    raise  # nothing serves: halt, as gunicorn does
                for pid in gone:
                    why = self._boot_failures.setdefault(pid, f"exit status {e.exit_status} (the log says why)")
                    self.log.error("worker %s failed to boot: %s; %d workers keep serving", pid, why, serving)
                if not self._reloading:  # a replaced worker: the others serve; try again later
                    self.log.error("a new worker is started again in %g s", BOOT_RETRY_SECONDS)
                    self._respawn_after = time.monotonic() + BOOT_RETRY_SECONDS
                    self._boot_failures.clear()

    def spawn_workers(self) -> None:
        if time.monotonic() < self._respawn_after:
            return  # a worker failed to boot a moment ago: the others serve meanwhile
        super().spawn_workers()

    def _read_reports(self) -> None:
        try:
            while True:
                data = os.read(self._ready_read, 65536)
                if not data:
                    break
                self._reports += data
        except BlockingIOError:
            pass
        while len(self._reports) >= _REPORT.size:
            pid, length = _REPORT.unpack_from(self._reports)
            if len(self._reports) < _REPORT.size + length:
                break
            reason = self._reports[_REPORT.size:_REPORT.size + length].decode("utf-8", "replace")
            self._reports = self._reports[_REPORT.size + length:]
            if length:
                self._boot_failures[pid] = reason
            else:
                self._ready.add(pid)
        self._ready &= set(self.WORKERS)
