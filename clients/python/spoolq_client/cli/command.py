"""What a client command is: :class:`Command`, the one way this package registers one, and
:class:`CliError`, the one error a command raises for the user.

A command is a name, the one-line summary ``spoolq --help`` lists, how its arguments are declared
(``configure``) and what runs them (``run``, returning the exit status). A command is registered in
one place: a line under its name in the ``spoolq.commands`` entry-point group of this
distribution's ``pyproject.toml``. ``spoolq`` (the server distribution's command) finds it there,
and so do ``spoolq-client`` and ``python -m spoolq_client``, which run it where only this package
is installed. ``main(argv, prog)`` is all either calls.

:class:`Command` and :class:`CliError` are twins of the server's ``spoolq.cli.command`` ones: this
distribution installs without the server and the server imports nothing of it, so each keeps its
copy (this one parses options between positionals; the server's also reports a settings error);
``tests/cli/test_twin_helpers.py`` holds the two to the same help, output and exit statuses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class CliError(Exception):
    """A one-line error for stderr; ``code`` is the exit status (1: the request failed, 2: usage)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class _IntermixedParser(argparse.ArgumentParser):
    """Options may come between positionals (``spoolq send q --string 7``): argparse's intermixed parsing."""

    _inside = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inside:  # argparse's intermixed parsing calls this itself
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


@dataclass(frozen=True)
class Command:
    """A client command: ``spoolq <name> ...`` (or ``spoolq-client <name> ...``)."""

    name: str
    summary: str  # one line, lower case, no full stop: what ``spoolq --help`` lists
    configure: Callable[[argparse.ArgumentParser], None]  # declares the arguments
    run: Callable[[argparse.Namespace], int]
    examples: str  # one example command line per line, shown at the end of ``--help``
    description: str | None = None  # the ``--help`` text above the arguments (default: the summary)

    def parser(self, prog: str | None = None) -> argparse.ArgumentParser:
        p = _IntermixedParser(
            prog=prog or f"spoolq {self.name}",
            description=self.description or self.summary[0].upper() + self.summary[1:] + ".",
            epilog="examples:\n" + "\n".join(f"  {line}" for line in self.examples.strip().splitlines()),
            formatter_class=argparse.RawDescriptionHelpFormatter)
        self.configure(p)
        return p

    def main(self, argv: Sequence[str], prog: str | None = None) -> int:
        """Parse ``argv`` (the arguments after the name), run, and return the exit status; a
        :class:`CliError` is one line on stderr."""
        parser = self.parser(prog)
        args = parser.parse_args(list(argv))
        args.prog = parser.prog.rsplit(" ", 1)[0]  # spoolq, spoolq-client or python -m spoolq_client
        try:
            return self.run(args)
        except CliError as e:
            print(f"{args.prog}: {e}", file=sys.stderr)
            return e.code
