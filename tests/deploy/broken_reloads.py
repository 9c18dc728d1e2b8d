"""Reloads with mistakes, under load: a real ``spoolq serve`` (API keys, HTTPS) is sent ``SIGHUP``
after each of the mistakes an operator makes, while clients send and poll throughout on every
core kept busy (:mod:`tests.deploy.reload_load`); then after a good change.

The mistakes (:data:`KINDS`), each undone before the next:

* ``permission``: an identity with a malformed permission (``queue|pots|orders``);
* ``yaml``: an indentation YAML cannot parse;
* ``unknown key``: ``queue:`` where ``queues:`` was meant;
* ``value type``: a declared queue's ``visibility_timeout: soon``;
* ``tls``: the certificate file replaced with something that is not one;
* ``boot``: new code on disk whose app fails to import, so every new worker fails to boot (the
  service runs from a copy of the package, as :func:`~tests.deploy.reload_load.slow_booting_code`).

For each, the figures count whether it was *reported*: an ERROR line in the log naming it and
``/readyz`` saying the reload failed with it. *workers_kept* says whether the workers that served
before the first mistake were still the ones serving after the last; *applied* whether the good
reload that follows put its new identity in force (and ``/readyz`` and ``/metrics`` say so).

``python -m tests.deploy.broken_reloads --rounds 20`` prints the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import requests

from tests.deploy.reload_load import (
    CHECKOUT,
    Figures,
    Load,
    _report,
    busy_cores,
    http_workers,
    reload_and_wait,
)
from tests.e2e.spoolq_server import Server, running_server
from tests.tls.conftest import make_pki

KEY, NEW_KEY = "k-load", "k-added-by-the-good-reload"
GOOD = f"""\
api_keys:
  - name: load
    key: {KEY}
    permissions: ["queue|*|*"]
queues:
  - name: reload-load
    door: emodb
"""
NEW_IDENTITY = f"""\
  - name: added
    key: {NEW_KEY}
    permissions: ["queue|get_status|*"]
"""
KINDS = ("permission", "yaml", "unknown key", "value type", "tls", "boot")
BROKEN_BUILD = "a broken build"


class Mistakes:
    """Makes each kind of mistake in the files a reload reads, and undoes it."""

    def __init__(self, config: Path, cert: Path, app: Path) -> None:
        self.config, self.cert, self.app = config, cert, app
        self.good = {p: p.read_bytes() for p in (config, cert, app)}

    def make(self, kind: str) -> str:
        """Make the mistake ``kind``; what the log and ``/readyz`` must then name."""
        if kind == "permission":
            shop = '  - name: shop\n    key: k-shop\n    permissions: ["queue|pots|orders"]\n'
            self.config.write_text(GOOD.replace("queues:", shop + "queues:"))
            return "api_keys[1].permissions[0]: permission 'queue|pots|orders': unknown action 'pots'"
        if kind == "yaml":
            self.config.write_text(GOOD.replace("    key:", "   key:"))
            return "is not valid YAML: line 3, column 4"
        if kind == "unknown key":
            self.config.write_text(GOOD.replace("queues:", "queue:"))
            return "unknown key 'queue' (did you mean 'queues'?)"
        if kind == "value type":
            self.config.write_text(GOOD + "    visibility_timeout: soon\n")
            return "queues[0] (reload-load): visibility_timeout must be a number of seconds"
        if kind == "tls":
            self.cert.write_text("not a certificate\n")
            return f"tls: certfile {self.cert}: no PEM certificate in it"
        if kind == "boot":
            self.app.write_text(self.good[self.app].decode() + f"\nraise RuntimeError({BROKEN_BUILD!r})\n")
            return f"a new worker failed to boot: RuntimeError: {BROKEN_BUILD}"
        raise ValueError(kind)

    def undo(self) -> None:
        for path, content in self.good.items():
            path.write_bytes(content)


def code_copy(workdir: Path) -> tuple[dict[str, str], Path]:
    """A copy of the service package that the server runs from (so that its app can be broken);
    the environment that runs it, and the copy's ``spoolq/http/app.py``."""
    code = workdir / "code"
    shutil.copytree(CHECKOUT / "service" / "spoolq", code / "spoolq", ignore=shutil.ignore_patterns("__pycache__"))
    return {"PYTHONPATH": f"{code}{os.pathsep}{CHECKOUT}"}, code / "spoolq" / "http" / "app.py"


def _refusals(server: Server) -> int:
    return server.log.read_text().count("reload refused (")


def _await_refusal(server: Server, count: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while _refusals(server) < count:
        assert server.proc is not None and server.proc.poll() is None, "the master exited"
        assert time.monotonic() < deadline, f"no refusal {count} in the log {timeout} s after SIGHUP"
        time.sleep(0.05)


def _reported(server: Server, want: str, verify: str) -> bool:
    """An ERROR line names ``want``, and /readyz says the reload failed with it."""
    logged = any("[ERROR] reload refused: " in line and want in line for line in server.log.read_text().splitlines())
    ready = requests.get(f"{server.url}/readyz", verify=verify, timeout=30).json()
    config = ready.get("config", {})
    return logged and config.get("reload") == "failed" and any(want in p for p in config.get("problems", []))


def run_broken_reloads(workdir: Path, rounds: int = 20, *, workers: int = 2, threads: int = 8) -> dict[str, object]:
    """``rounds`` reloads, each with one mistake of :data:`KINDS` in turn, under load on busy cores,
    then a good one; the clients' figures and what was reported."""
    pki = make_pki(workdir / "pki")
    env, app = code_copy(workdir)
    figures = Figures()
    reported: dict[str, int] = dict.fromkeys(KINDS, 0)
    verify = str(pki.ca)
    with running_server(workdir, keys=False, config_text=GOOD, workers=workers, threads=threads, extra_env=env,
                        extra_args=("--certfile", str(pki.cert), "--keyfile", str(pki.key)), tls_ca=pki.ca) as server, \
            busy_cores():
        assert server.proc is not None and server.config is not None
        mistakes = Mistakes(server.config, pki.cert, app)
        load = Load(server.url, figures, headers={"X-BV-API-Key": KEY}, verify=verify).start()
        try:
            time.sleep(1.0)
            serving = http_workers(server)
            for i in range(rounds):
                kind = KINDS[i % len(KINDS)]
                want = mistakes.make(kind)
                os.kill(server.proc.pid, signal.SIGHUP)
                _await_refusal(server, i + 1)
                reported[kind] += _reported(server, want, verify)
                mistakes.undo()
            workers_kept = http_workers(server) == serving
            server.config.write_text(GOOD.replace("queues:", NEW_IDENTITY + "queues:"))
            reload_and_wait(server, workers)
            applied = _applied(server, verify)
        finally:
            load.stop_sending()
            load.drain()
    out: dict[str, object] = dict(_report(figures, rounds), first_errors=figures.errors[:3])
    out.update(reported=sum(reported.values()), reported_by_kind=reported, workers_kept=workers_kept, applied=applied)
    return out


def _applied(server: Server, verify: str, within: float = 30.0) -> bool:
    """The good reload is in force within ``within`` seconds (on busy cores the last old worker may
    still answer a moment after the new ones report ready): its new key works, /readyz and /metrics
    say the reload applied, the log says what changed."""
    deadline = time.monotonic() + within
    while True:
        size = requests.get(f"{server.url}/queue/1/reload-load/size", headers={"X-BV-API-Key": NEW_KEY},
                            verify=verify, timeout=30)
        ready = requests.get(f"{server.url}/readyz", verify=verify, timeout=30).json()
        metrics = requests.get(f"{server.url}/metrics", verify=verify, timeout=30).text
        if (size.status_code == 200 and ready.get("config", {}).get("reload") == "ok"
                and "spoolq_config_reload_success 1.0" in metrics
                and "reload: identities added: added" in server.log.read_text()):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=20)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="spoolq-broken-reloads-") as tmp:
        figures = run_broken_reloads(Path(tmp), a.rounds)
    print(json.dumps(figures))
    good = (figures["refused"] == figures["errors"] == figures["lost"] == figures["slow"] == 0
            and figures["reported"] == a.rounds and figures["workers_kept"] and figures["applied"])
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
