"""A newcomer's walk: the README's and docs/client.md's shell blocks run literally, line by line, in
the fresh virtual environment with all three wheels (``tests/packaging/wheels.py``), against a
``spoolq serve`` started from it, as a user who copies them would.

``.venv/bin/spoolq`` and ``~/spoolq-env/bin/spoolq`` are that venv's (symlinks in the working
directory, which is also ``$HOME``). A line runs unless it installs (pip, pipx, venv), starts the
service (the test started it), needs what a newcomer does not have yet (a placeholder such as
``ID...`` or ``QUEUE``, an absolute path, another program's server), or follows forever (``tail``
without ``--count``). Every line that runs must succeed, or fail with one error line that names
its cause; no line may print a stack trace, even where it succeeded.

Cost: one more ``spoolq serve`` and about 40 commands in the venvs the wheel tests make (about 30 s
on a quiet machine); the wheels and venvs are built once for both modules.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.packaging.wheels import CHECKOUT, Venv

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(900)]  # the wheels and venvs are built in the first test's setup

#: the documents whose shell blocks a newcomer copies, in the order they read them
WALKED = [CHECKOUT / "README.md", CHECKOUT / "docs/client.md"]
#: what a line must not start with or contain to be run here (see the module docstring)
_NOT_RUN = re.compile(r"^(python3? -m venv|pipx? |.*/pip |scripts/|curl |AWS_|aws |redis-cli|podman|systemctl|"
                      r"sudo |cd |export )|\bserve\b|\.\.\.|\bID\b|\bQUEUE\b|\bMOVE\b|\bKIND\b|\bFILE\b|\[|"
                      r"(^|\s)/(?!dev/null)|\bproducer\b|tail -f|\bzsh\b")
#: error lines that name no cause: a bare status, a guess, nothing after the colon
_NO_CAUSE = [re.compile(p) for p in (r"\b\d{3} (not found|bad request|Not Found|Bad Request)\s*$", r"\?\)",
                                     r":\s*$", r"no reason given", r"HTTP error")]


def shell_lines(document: Path) -> list[str]:
    """The command lines of ``document``'s ``sh`` blocks, continuation lines joined, comments kept
    out (``#`` outside quotes)."""
    lines: list[str] = []
    for block in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", document.read_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue
            if words:
                code = line.split(" #", 1)[0].rstrip() if " #" in line else line
                lines.append(code.strip())
    return lines


def walked(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if not re.search(r"(^|[\s|/])spoolq(-client)? ", line) or _NOT_RUN.search(line):
            continue
        if re.search(r"\bspoolq tail\b", line) and "--count" not in line:
            continue
        out.append(line)
    return out


def names_a_cause(stderr: str) -> bool:
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and not any(p.search(lines[0]) for p in _NO_CAUSE)


def test_the_walked_documents_have_commands_to_walk() -> None:
    chosen = [line for doc in WALKED for line in walked(shell_lines(doc))]
    assert len(chosen) >= 25, chosen
    assert any("--group-id" in line for line in chosen) and any("create orders.fifo" in line for line in chosen)


def test_a_newcomer_walks_the_readme_and_the_client_guide(venvs: dict[str, Venv]) -> None:
    v = venvs["all"]
    (v.workdir / ".venv").symlink_to(v.path)
    (v.workdir / "spoolq-env").symlink_to(v.path)
    (v.workdir / "job.json").write_text('{"task": "resize"}\n')
    failures = []
    with v.serving(v.workdir / "walk-root") as url:
        for doc in WALKED:
            for line in walked(shell_lines(doc)):
                done = v.shell(line, SPOOLQ_URL=url)
                if done.returncode != 0 and not names_a_cause(done.stderr):
                    failures.append((doc.name, line, done.returncode, done.stderr[-500:]))
        ran = len(v.ran)
    assert failures == [], failures
    assert ran >= 25


def test_installs_in_the_documents_name_the_checkout() -> None:
    """spoolq's distributions are not on the package index: every documented pip install names a
    path of the checkout (or a wheel), never ``pip install spoolq``."""
    ours = {"spoolq", "spoolq-client", "spoolq-spark", "spoolq[testing]", "'spoolq[testing]'"}
    named = []
    for doc in [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md"))]:
        for match in re.finditer(r"pip(?:x)? install ([^`\n]+)", doc.read_text()):
            command = re.split(r"&&|;|\||\)| #", match.group(1))[0]
            words = [w for w in shlex.split(command) if not w.startswith("-")]
            named += [(doc.name, w) for w in words if w in ours]
    assert named == []
