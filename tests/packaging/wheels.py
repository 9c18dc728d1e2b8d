"""The machinery of the packaging tier: the three wheels built from the checkout, each set installed
into a fresh virtual environment (:class:`Venv`), and every command run there checked for
tracebacks. ``tests/packaging/conftest.py`` builds them once per session (the ``venvs`` fixture)
for the wheel tests and the newcomer walk."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.spoolq_server import free_port

CHECKOUT = Path(__file__).resolve().parents[2]
#: distribution -> its project directory
PROJECTS = {"spoolq": CHECKOUT, "spoolq-client": CHECKOUT / "clients/python", "spoolq-spark": CHECKOUT / "clients/spark"}
SERVER_COMMANDS = ("serve", "check-config", "backup", "restore", "hash-key")
#: the client commands: the entry points of its pyproject.toml, the one place one is registered
CLIENT_COMMANDS = tuple(tomllib.loads((CHECKOUT / "clients/python/pyproject.toml").read_text())
                        ["project"]["entry-points"]["spoolq.commands"])
#: documents whose code examples name commands
DOCUMENTS = [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md")),
             CHECKOUT / "clients/python/README.md", CHECKOUT / "clients/spark/README.md"]
_IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".venv", "data", ".git", "*.pyc")


#: a line of a stack trace: Python's, or a JVM's (``\tat org.apache...``, ``java.io.FileNotFoundException: ...``)
_STACK = re.compile(r"Traceback \(most recent call last\)|^\s+at [\w$.]+\(|^[\w.]+(Exception|Error): .*\n\s+at ",
                    re.M)


def stack_trace(text: str) -> bool:
    """Whether ``text`` holds a stack trace (what a user should never see on a path that worked)."""
    return _STACK.search(text) is not None


@dataclass
class Venv:
    """A fresh virtual environment with some of the wheels installed, and every command run in it."""

    path: Path
    dists: tuple[str, ...]
    workdir: Path  # an empty directory: the working directory of every command
    ran: list[str] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        """A minimal environment: this venv's bin first, no PYTHONPATH, no SPOOLQ_* but ``extra``."""
        return {"PATH": f"{self.path / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(self.workdir),
                "LANG": "C.UTF-8", **extra}

    def run(self, *argv: str, stdin: str | None = None, timeout: float = 120,
            **extra: str) -> subprocess.CompletedProcess[str]:
        """``argv`` run in this venv (its first word from the venv's bin); no traceback, whatever the status."""
        exe = self.path / "bin" / argv[0]
        done = subprocess.run([str(exe), *argv[1:]], input=stdin, capture_output=True, text=True,
                              cwd=self.workdir, env=self.env(**extra), timeout=timeout)
        self.ran.append(" ".join(argv))
        assert "Traceback" not in done.stdout + done.stderr, (argv, done.stderr[-3000:])
        return done

    def shell(self, line: str, *, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess[str]:
        """``line`` run by bash in the working directory, as a user types it; no traceback, and no
        stack trace of another runtime, whatever the status."""
        done = subprocess.run(["bash", "-c", line], input="", capture_output=True, text=True, cwd=self.workdir,
                              env=self.env(**extra), timeout=timeout)
        self.ran.append(line)
        assert not stack_trace(done.stdout + done.stderr), (line, done.stderr[-3000:])
        return done

    def ok(self, *argv: str, stdin: str | None = None, **extra: str) -> str:
        done = self.run(*argv, stdin=stdin, **extra)
        assert done.returncode == 0, (argv, done.stdout[-1000:], done.stderr[-2000:])
        return done.stdout

    def names_package(self, package: str, *argv: str) -> None:
        """``argv`` fails with one line on stderr that names ``package`` to install (exit 2)."""
        done = self.run(*argv)
        assert done.returncode == 2 and done.stdout == "", (argv, done)
        assert done.stderr.count("\n") == 1 and "install" in done.stderr and package in done.stderr, \
            (argv, done.stderr)

    @contextmanager
    def serving(self, root: Path) -> Iterator[str]:
        """``spoolq serve`` from this venv on ``root``; its URL once ``/readyz`` answers."""
        port = free_port()
        log_path = self.workdir / f"serve-{port}.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen([str(self.path / "bin/spoolq"), "serve", "--root", str(root), "--port",
                                     str(port), "--workers", "1", "--threads", "8"], cwd=self.workdir,
                                    env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.ran.append(f"spoolq serve --root {root.name} --port {port}")
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, log_path.read_text()
                try:
                    with urllib.request.urlopen(url + "/readyz", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                assert time.monotonic() < deadline, "spoolq serve did not become ready in 60 s"
                time.sleep(0.2)
            yield url
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
            text = log_path.read_text()
            assert "Traceback" not in text, text[-3000:]


def _build(name: str, source: Path, tmp: Path) -> Path:
    """The wheel of ``name``, built from a copy of its project (the checkout gets no build/ directory)."""
    copy = tmp / "src" / name
    if name == "spoolq":
        copy.mkdir(parents=True)
        for item in ("pyproject.toml", "README.md"):
            shutil.copy2(source / item, copy / item)
        shutil.copytree(source / "service", copy / "service", ignore=_IGNORED)
    else:
        shutil.copytree(source, copy, ignore=_IGNORED)
    out = tmp / "wheels" / name
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(copy)],
                   check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = out.glob("*.whl")
    return wheel


def _venv(tmp: Path, label: str, wheels: Sequence[Path], dists: tuple[str, ...]) -> Venv:
    path = tmp / "venvs" / label
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    done = subprocess.run([str(path / "bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           *map(str, wheels)], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    workdir = tmp / "work" / label
    workdir.mkdir(parents=True)
    return Venv(path, dists, workdir)


def make_venvs(tmp: Path) -> dict[str, Venv]:
    """The wheels built, and the server alone, the client alone and all three in fresh venvs."""
    with ThreadPoolExecutor(3) as pool:
        built = dict(zip(PROJECTS, pool.map(lambda item: _build(*item, tmp), PROJECTS.items()), strict=True))
        sets = {"server": ("spoolq",), "client": ("spoolq-client",), "all": tuple(PROJECTS)}
        made = dict(zip(sets, pool.map(lambda kv: _venv(tmp, kv[0], [built[d] for d in kv[1]], kv[1]),
                                       sets.items()), strict=True))
    return made
