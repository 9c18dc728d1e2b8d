"""Fixtures for the browser tests of the web console: a real ``spoolq serve`` (gunicorn) and Debian's
Chromium driven by Playwright (the system executable; Playwright never downloads a browser).

Screenshots go to ``test-artifacts/console/`` in the checkout (gitignored), kept after the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.spoolq_server import Server, free_port

CHECKOUT = Path(__file__).resolve().parents[2]
ARTIFACTS = CHECKOUT / "test-artifacts" / "console"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

#: admin may do everything; viewer may only look; team may do everything on team-* queues
KEYS_CONFIG = """
api_keys:
  - {name: admin, key: console-admin, permissions: ["queue|*|*"]}
  - {name: viewer, key: console-viewer, permissions: ["queue|get_status|*"]}
  - {name: team, key: console-team, permissions: ["queue|*|team-*"]}
"""


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    deps = subprocess.run([str(CHECKOUT / "scripts/system-deps"), "chromium"], capture_output=True, text=True)
    if deps.returncode != 0 or not Path(CHROMIUM).exists():
        pytest.skip(f"chromium unavailable: {deps.stderr.strip() or CHROMIUM + ' missing'}")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def _server(tmp: Path, config: str | None, extra_args: tuple[str, ...] = ()) -> Iterator[Server]:
    path = None
    if config is not None:
        path = tmp / "console.yaml"
        path.write_text(config)
    server = Server(root=tmp / "root", port=free_port(), config=path, workers=2, threads=8, log=tmp / "server.log",
                    extra_args=extra_args)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _server(tmp_path_factory.mktemp("console-open"), None)


@pytest.fixture(scope="module")
def disque_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Open mode with the Disque door on (its port in ``server.disque_port``)."""
    port = free_port()
    for server in _server(tmp_path_factory.mktemp("console-disque"), None, ("--disque-port", str(port))):
        server.disque_port = port  # type: ignore[attr-defined]
        yield server


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _server(tmp_path_factory.mktemp("console-keys"), KEYS_CONFIG)


def data_state(root: Path) -> dict[str, str]:
    """Every file under the data directory with the SHA-256 of its content, and every queue
    directory: what a refused console action must leave exactly as it was. Empty state and
    bucket directories come and go with maintenance (they hold nothing), and ``trash/`` empties
    itself in the background; a message or queue wrongly removed would still show, as missing
    from ``queues/``."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d != "trash"]
        if os.path.dirname(rel) == "queues":
            out[rel + "/"] = "queue"
        for f in filenames:
            p = os.path.join(dirpath, f)
            with contextlib.suppress(FileNotFoundError):
                out[os.path.relpath(p, root)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def settled_state(root: Path, timeout: float = 20.0) -> dict[str, str]:
    """:func:`data_state` once it stayed the same for two seconds (maintenance runs every second)."""
    deadline = time.monotonic() + timeout
    last, same_since = data_state(root), time.monotonic()
    while time.monotonic() - same_since < 2.0 and time.monotonic() < deadline:
        time.sleep(0.25)
        now = data_state(root)
        if now != last:
            last, same_since = now, time.monotonic()
    return last


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failure, a screenshot of every open page (``<test>-failed-<n>.png``)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call" and report.failed and "browser" in item.fixturenames:
        b = item.funcargs["browser"]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for i, page in enumerate(p for ctx in b.contexts for p in ctx.pages):  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / f"{item.name}-failed-{i}.png"), full_page=True)
