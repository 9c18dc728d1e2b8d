"""An installed server keeps its data where no reinstall deletes it: the wheel installed with pipx
by a user (uid 65534, a home of its own, the system Python every user can run), ``spoolq serve``
without ``--root``, a message sent, the server stopped, ``pipx reinstall spoolq``, the server started
again: the message is there, in ``~/.local/share/spoolq``, and nothing was written inside the
virtualenv. (Before, the data went to ``<venv>/lib/python3.11/data`` and the reinstall deleted it.)

pipx comes from PyPI into a virtualenv of its own; the server's dependencies are installed by pip as
for any user."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from spoolq.store import root_format
from tests.e2e.spoolq_server import free_port

pytestmark = pytest.mark.packaging

CHECKOUT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")
USER = 65534  # nobody: a user who is not root, so the default is the user's own data directory
AS_USER = ("setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups")


@pytest.fixture
def world() -> Iterator[Path]:
    """A directory every user may read (pytest's own tmp is root's only), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="spoolq-pipx-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _build_wheel(out: Path) -> Path:
    """The spoolq wheel, built from a copy of the project (the checkout gets no build/ directory)."""
    copy = out / "src"
    copy.mkdir(parents=True)
    for item in ("pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / item, copy / item)
    shutil.copytree(CHECKOUT / "service", copy / "service",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "*.pyc"))
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out / "wheels"), str(copy)],
                   check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = (out / "wheels").glob("*.whl")
    for path in (out / "wheels", wheel):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return wheel


def _network_settings() -> dict[str, str]:
    """The machine's way to the package index, as any user of it has it: pip's own settings
    (``PIP_INDEX_URL``, ``PIP_CERT``, ...), proxies and certificate bundles."""
    names = {"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}
    return {name: value for name, value in os.environ.items()
            if name.startswith("PIP_") or name.lower().endswith("_proxy") or name in names}


class User:
    """Commands run as :data:`USER` with ``home`` as its home, and only the system's PATH and pipx's bin."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {"HOME": str(home), "PATH": f"{home}/.local/bin:{home}/pipx-env/bin:/usr/local/bin:/usr/bin:/bin",
                    "LANG": "C.UTF-8", **_network_settings()}

    def run(self, *argv: str, timeout: float = 900) -> str:
        done = subprocess.run([*AS_USER, *argv], capture_output=True, text=True, env=self.env, cwd=self.home,
                              timeout=timeout)
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-3000:])
        return done.stdout

    @contextmanager
    def serving(self) -> Iterator[str]:
        """``spoolq serve`` as installed by pipx, without --root; its URL once ready."""
        port = free_port()
        log = self.home / f"serve-{port}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([*AS_USER, str(self.home / ".local/bin/spoolq"), "serve", "--port", str(port),
                                     "--workers", "1", "--threads", "4"], env=self.env, cwd=self.home, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, log.read_text()
                try:
                    with urllib.request.urlopen(url + "/readyz", timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            yield url
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        assert "Traceback" not in log.read_text()


def _call(url: str, method: str = "GET", body: object | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read() or b"null")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None or not SYSTEM_PYTHON.exists(),
                    reason="needs root (to run as another user: setpriv) and the system's python3")
def test_pipx_reinstall_loses_nothing(world: Path) -> None:
    wheel = _build_wheel(world / "build")
    home = world / "home"
    home.mkdir()
    os.chown(home, USER, USER)
    user = User(home)
    user.run(str(SYSTEM_PYTHON), "-m", "venv", str(home / "pipx-env"))
    user.run(str(home / "pipx-env/bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "pipx")
    user.run("pipx", "install", str(wheel))
    venv = Path(user.run("pipx", "environment", "--value", "PIPX_LOCAL_VENVS").strip()) / "spoolq"
    data = home / ".local/share/spoolq"
    with user.serving() as url:
        _call(f"{url}/queue/1/kept/send", "POST", {"order": 1})
    log = next(home.glob("serve-*.log")).read_text()
    assert f"spoolq: data directory {data} (~/.local/share/spoolq, the default for a user)" in log, log[:2000]
    assert (data / "queues").is_dir()
    # a data root's files: pollers.lock, or a format file beside queues/ (one walk of the virtualenv)
    roots_in_venv = {path.parent for path in venv.rglob("*")
                     if path.name == root_format.POLLERS_LOCK
                     or (path.name == root_format.FORMAT_FILE and (path.parent / "queues").is_dir())}
    assert venv.is_dir() and not roots_in_venv, f"the server wrote inside its virtualenv: {roots_in_venv}"
    assert (data / root_format.FORMAT_FILE).is_file()
    user.run("pipx", "reinstall", "spoolq")
    with user.serving() as url:
        polled = _call(f"{url}/queue/1/kept/poll?ttl=30&limit=10")
    assert [m["payload"] for m in polled] == [{"order": 1}], polled  # type: ignore[union-attr,index]
