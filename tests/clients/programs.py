"""Building and running the client programs of the ``clients`` tier.

Each program under ``tests/clients/java/<module>`` (one Maven reactor) and ``tests/clients/go/<module>``
is a small real program against a real client library. It prints one line per numbered assertion
(``ok N - what`` or ``FAIL N - what: why``) and ``N passed, M failed`` last. :func:`run` runs one
against a server and fails the test on a failed assertion, a missing closing line or a non-zero
exit, showing the failed assertions and the end of the output.

Dependencies come from the registries the first time (Maven's local repository ``~/.m2``, the Go
module cache) and are reused afterwards: Maven runs offline first and online only when the offline
build cannot resolve something. Build outputs stay out of the repository: ``target/`` directories
(ignored by ``.gitignore``) and Go binaries in a pytest temporary directory.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
JAVA = HERE / "java"
GO = HERE / "go"

#: the reactor's program modules (``checks`` is the library they share; ``emodb-parent`` is the stand-in for
#: a parent POM that EmoDB's client jars name and the registry does not serve)
JAVA_MODULES = ("aws-sdk-sqs", "spring-sqs", "jedisque", "emodb-queue")

CLOSING = re.compile(r"^(\d+) passed, (\d+) failed$")


@dataclass(frozen=True)
class JavaProgram:
    """A built reactor module: run it with :meth:`command`."""

    module: str
    classpath: str

    def command(self, main_class: str, *args: str) -> list[str]:
        return ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", self.classpath, main_class, *args]


def require(*tools: str) -> None:
    """Skip the test, naming what is missing, unless every tool is on PATH."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the clients tier needs {', '.join(missing)} (as root, scripts/system-deps clients installs "
                    "a JDK and Maven)")


def build_java() -> dict[str, JavaProgram]:
    """Builds every module of the reactor in one Maven run: offline when ``~/.m2`` already holds the
    dependencies, else online (the first run on a machine). Returns each program module's classpath."""
    require("java", "mvn")
    base = ["mvn", "-B", "-q", "-f", str(JAVA / "pom.xml"), "package"]
    started = time.monotonic()
    offline = subprocess.run([*base, "-o"], capture_output=True, text=True, timeout=900)
    if offline.returncode != 0:
        online = subprocess.run(base, capture_output=True, text=True, timeout=1800)
        if online.returncode != 0:
            pytest.fail("the Java client programs did not build (online, after offline failed):\n"
                        + _tail(online.stdout + online.stderr, 60))
    print(f"clients tier: Maven reactor built in {time.monotonic() - started:.1f} s"
          f" ({'offline' if offline.returncode == 0 else 'online: dependencies fetched'})")
    programs = {}
    for module in JAVA_MODULES:
        target = JAVA / module / "target"
        deps = (target / "classpath.txt").read_text().strip()
        programs[module] = JavaProgram(module, os.pathsep.join([str(target / "classes"), deps]))
    return programs


#: where Go's own release archive installs it, for a PATH that lacks it
GO_HOME_BINARY = Path("/usr/local/go/bin/go")


def go_command(module: str) -> str:
    """The ``go`` to build ``module`` with; skips the test when there is none as new as its go.mod asks
    (Debian's golang-go is 1.19: too old for the AWS SDK for Go v2)."""
    go = shutil.which("go") or (str(GO_HOME_BINARY) if GO_HOME_BINARY.exists() else None)
    if go is None:
        pytest.skip("the clients tier's Go programs need Go (go.dev's release in /usr/local/go or on PATH)")
    wanted = re.search(r"^go (\d+)\.(\d+)", (GO / module / "go.mod").read_text(), re.M)
    have = re.search(r"go(\d+)\.(\d+)", subprocess.run([go, "version"], capture_output=True, text=True).stdout)
    if wanted and (have is None or (int(have[1]), int(have[2])) < (int(wanted[1]), int(wanted[2]))):
        pytest.skip(f"{module} needs Go {wanted[1]}.{wanted[2]} or newer; {go} is "
                    + (f"{have[1]}.{have[2]}" if have else "of an unknown version"))
    return go


def build_go(module: str, out_dir: Path) -> Path:
    """``go build`` of ``tests/clients/go/<module>`` into ``out_dir``; modules come from the module
    cache, or the module proxy the first time (go.sum pins them)."""
    go = go_command(module)
    binary = out_dir / module
    started = time.monotonic()
    done = subprocess.run([go, "build", "-o", str(binary), "."], cwd=GO / module, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"})
    if done.returncode != 0:
        pytest.fail(f"the Go program {module} did not build:\n" + _tail(done.stdout + done.stderr, 60))
    print(f"clients tier: go build {module} in {time.monotonic() - started:.1f} s")
    return binary


def run(command: Sequence[str], env: Mapping[str, str], *, timeout: float, cwd: Path | None = None) -> list[str]:
    """Runs a client program to its end and checks its numbered assertions; returns its output lines."""
    started = time.monotonic()
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env={**os.environ, **env})
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"{_name(command)} did not finish within {timeout:.0f} s; its output ends:\n{_tail(out, 40)}")
    lines = done.stdout.splitlines()
    closing = next((CLOSING.match(line) for line in reversed(lines) if line.strip()), None)
    failed = [line for line in lines if line.startswith("FAIL ")]
    took = time.monotonic() - started
    print(f"clients tier: {_name(command)} ran in {took:.1f} s: "
          + (closing.group(0) if closing else "no closing line"))
    if closing is None or failed or done.returncode != 0 or int(closing.group(1)) == 0:
        pytest.fail(
            f"{_name(command)} exited {done.returncode}; "
            + (closing.group(0) if closing else "no 'N passed, M failed' line") + "\n"
            + ("failed assertions:\n" + "\n".join(failed) + "\n" if failed else "")
            + "output ends:\n" + _tail(done.stdout, 30) + "\nstderr ends:\n" + _tail(done.stderr, 30))
    return lines


def _name(command: Sequence[str]) -> str:
    """The program's name in a command line: the main class after a classpath, else the binary."""
    if "-cp" in command:
        return " ".join(command[command.index("-cp") + 2:])
    return " ".join([Path(command[0]).name, *command[1:]])


def _tail(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[-n:])
