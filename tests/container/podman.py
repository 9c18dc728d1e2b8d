"""Building and running ``deploy/Containerfile`` with rootful podman, without an image registry.

* **The base** (``BASE`` of the recipe) is made here: ``debootstrap`` of the host's Debian release
  with its ``python3`` and ``python3-venv``, from the mirror the host's apt already uses, tarred
  and ``podman import``-ed as ``localhost/spoolq-test-base:<codename>``. It is made once per
  machine (about a minute) and kept: later runs find it with ``podman image exists``.
* **The packages**: ``pip wheel`` of the checkout's ``spoolq`` and ``spoolq-client`` with their
  dependencies, on the host, into ``wheels/`` of a build context that holds what
  ``.containerignore`` lets in; the recipe installs from it without an index.
* **podman** runs with ``--runtime runc --cgroup-manager cgroupfs`` and explicit ``nofile`` and
  ``nproc`` limits: on these machines the defaults fail (``error setting rlimit type 7: operation
  not permitted``; crun: ``setrlimit RLIMIT_NOFILE: Operation not permitted``).

:func:`unavailable` says why the tier cannot run here (``None``: it can); the tests skip with it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
GLOBAL_FLAGS = ("--runtime", "runc", "--cgroup-manager", "cgroupfs")
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
#: what the build context holds (as .containerignore lets in), besides wheels/
CONTEXT_FILES = ("pyproject.toml", "README.md", ".containerignore", "service", "clients/python")


def podman(*args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["podman", *GLOBAL_FLAGS, *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])} ... failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def codename() -> str:
    text = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    found = re.search(r"^VERSION_CODENAME=(\w+)", text, re.M)
    return found.group(1) if found else ""


def host_mirror(release: str) -> str | None:
    """The Debian mirror the host's apt uses for ``release`` (None: debootstrap's default)."""
    texts = [p.read_text() for p in [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
             if p.is_file() and p.suffix in ("", ".list", ".sources")]
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):  # deb822 .sources
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and release in suites.group(1).split() and re.search(r"^Types:.*\bdeb\b", stanza, re.M):
                return uris.group(1)
        for line in text.splitlines():  # one-line format: deb [options] uri suite components
            parts = re.sub(r"\[[^]]*\]", " ", line).split()
            if len(parts) >= 3 and parts[0] == "deb" and parts[2] == release:
                return parts[1]
    return None


def unavailable() -> str | None:
    """Why the container tier cannot run on this machine (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (rootful podman)"
    missing = [p for p in ("podman", "debootstrap") if shutil.which(p) is None]
    if missing:
        return f"{' and '.join(missing)} missing: scripts/system-deps container"
    if not codename() or platform.machine() != "x86_64":
        return "needs a Debian host on x86_64 (the base is debootstrapped from the host's release)"
    return None


@contextlib.contextmanager
def _machine_lock(name: str) -> Iterator[None]:
    with open(f"/var/tmp/{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def base_image() -> str:
    """The Debian base, made once per machine and kept; its name."""
    release = codename()
    name = f"localhost/spoolq-test-base:{release}"
    with _machine_lock("spoolq-test-base"):
        if podman("image", "exists", name, check=False).returncode == 0:
            return name
        with tempfile.TemporaryDirectory(prefix="spoolq-debootstrap-", dir="/var/tmp") as tmp:
            root = Path(tmp) / "root"
            mirror = host_mirror(release)
            done = subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv", release,
                                   str(root), *([mirror] if mirror else [])],
                                  capture_output=True, text=True, timeout=1200)
            if done.returncode != 0:
                raise RuntimeError(f"debootstrap {release} failed: {(done.stdout + done.stderr)[-2000:]}")
            shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
            tarball = Path(tmp) / "root.tar"
            with tarfile.open(tarball, "w") as tar:
                tar.add(root, arcname=".")
            podman("import", "--change", 'CMD ["/bin/bash"]', str(tarball), name, timeout=600)
    return name


def build_context(directory: Path) -> Path:
    """The checkout's files the image needs, and ``wheels/`` of spoolq, spoolq-client and their
    dependencies, built here once."""
    for rel in CONTEXT_FILES:
        src, dst = CHECKOUT / rel, directory / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"))
        else:
            shutil.copy2(src, dst)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(directory / "wheels"),
                           str(CHECKOUT), str(CHECKOUT / "clients" / "python")],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"pip wheel failed: {done.stderr[-2000:]}")
    return directory


def build_image(context: Path, base: str, tag: str) -> None:
    podman("build", "--format", "docker", "--layers=false", *LIMITS, "--build-arg", f"BASE={base}",
           "-f", str(CHECKOUT / "deploy" / "Containerfile"), "-t", tag, str(context), timeout=900)


def cannot_run(base: str) -> str | None:
    """The exact error of running a container of ``base`` here (None: containers run)."""
    done = podman("run", "--rm", *LIMITS, base, "true", check=False, timeout=120)
    return None if done.returncode == 0 else done.stderr.strip()


def wait_ready(url: str, container: str, timeout: float = 90, verify: str | bool = True) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException):
            if requests.get(f"{url}/readyz", timeout=5, verify=verify).status_code == 200:
                return
        time.sleep(0.2)
    logs = podman("logs", container, check=False).stderr
    raise RuntimeError(f"the container did not become ready: {logs[-2000:]}")
