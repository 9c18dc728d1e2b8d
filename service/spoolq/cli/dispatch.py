"""``spoolq COMMAND ...``: find the command, here or in the ``spoolq.commands`` entry points, and run it.

A server command (:data:`SERVER_COMMANDS`) runs without looking at entry points; another name is
looked up in the entry-point group and only that entry point is loaded (``spoolq --help`` loads
them all for their summaries). The other distributions' commands are registered in one place each,
their ``pyproject.toml``'s entry points: this module keeps no list of them. A name found nowhere,
where a distribution that adds commands (:data:`SIBLINGS`) is not installed, is one line on
stderr naming the package to install, exit 2: the one that adds it, for the names the other
distributions add in this version (:data:`SIBLING_COMMANDS`, checked against their entry points by
the tests), else every package not installed.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points

from spoolq import __version__
from spoolq.cli.backup import BACKUP, RESTORE
from spoolq.cli.check_config import CHECK_CONFIG
from spoolq.cli.command import Command, PluginCommand
from spoolq.cli.hash_key import HASH_KEY
from spoolq.cli.serve import SERVE

#: the entry-point group other distributions add their commands to
ENTRY_POINT_GROUP = "spoolq.commands"

SERVER_COMMANDS: tuple[Command, ...] = (SERVE, CHECK_CONFIG, BACKUP, RESTORE, HASH_KEY)

#: the distributions that add commands, and what they add (said when one is not installed)
SIBLINGS: dict[str, str] = {
    "spoolq-client": "the client commands, which send, poll, acknowledge and manage queues over HTTP",
    "spoolq-spark": "spoolq pipeline, the Spark pipelines",
}

#: the commands each sibling adds in this version (said when it is not installed; the tests check
#: this against the siblings' entry points)
SIBLING_COMMANDS: dict[str, tuple[str, ...]] = {
    "spoolq-client": ("ack", "completion", "create", "delete", "delete-message", "move", "moves", "nack", "node",
                      "peek", "poll", "publish", "purge", "queues", "rates", "redrive", "release", "send", "settings",
                      "show", "size", "subscribe", "tail", "topics", "visibility", "whoami"),
    "spoolq-spark": ("pipeline",),
}

USAGE = "usage: spoolq [-h] [--version] COMMAND [ARGS...]"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``spoolq`` with ``argv`` (default: the process's arguments); the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_help(), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name == "--version":
        from spoolq.store.root_format import FORMAT

        print(f"spoolq {__version__} (on-disk format {FORMAT})")
        return 0
    for command in SERVER_COMMANDS:
        if command.name == name:
            return command.main(rest)
    found = _entry_points().get(name)
    if found is not None:
        plugin = _load(found)
        if plugin is None:
            return 2
        return plugin.main(rest, f"spoolq {name}")
    known = [c.name for c in SERVER_COMMANDS] + sorted(_entry_points())
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    missing = _missing_siblings()
    owner = next((dist for dist, names in SIBLING_COMMANDS.items() if name in names), None)
    if owner is not None and owner in missing:
        print(f"spoolq: '{name}' is a command of {owner}, not installed here ({owner} adds {SIBLINGS[owner]}): "
              f"install {owner}", file=sys.stderr)
    elif len(missing) == 1:
        [dist] = missing
        print(f"spoolq: no command {name!r} here{hint}: {dist}, not installed here, adds {SIBLINGS[dist]}: "
              f"install {dist}", file=sys.stderr)
    elif missing:
        print(f"spoolq: no command {name!r} here{hint}: it may come with a package not installed here, "
              + " or ".join(f"{dist} ({SIBLINGS[dist]})" for dist in missing)
              + f": install {' or '.join(missing)}", file=sys.stderr)
    else:
        print(f"spoolq: no command {name!r}{hint}; `spoolq --help` lists them", file=sys.stderr)
    return 2


def _missing_siblings() -> list[str]:
    """The distributions of :data:`SIBLINGS` that add no command here (not installed)."""
    present = {ep.dist.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.dist is not None}
    return [dist for dist in SIBLINGS if dist not in present]


def _entry_points() -> dict[str, EntryPoint]:
    """The ``spoolq.commands`` entry points by command name; a server command's name is never taken."""
    server = {c.name for c in SERVER_COMMANDS}
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in server}


def _load(entry: EntryPoint) -> PluginCommand | None:
    """The command object of ``entry``; None, after one line on stderr, when it cannot be imported."""
    dist = entry.dist.name if entry.dist is not None else "its package"
    try:
        command: PluginCommand = entry.load()
    except ImportError as e:
        print(f"spoolq: 'spoolq {entry.name}' comes with {dist}, which is installed but cannot load ({e}): "
              f"reinstall {dist}", file=sys.stderr)
        return None
    return command


def _help() -> str:
    lines = [USAGE, "", "spoolq: a durable file-per-message queue. `spoolq COMMAND --help` shows a command's "
                        "arguments and examples.", "", "commands of spoolq (the server):"]
    width = 14
    lines += [f"  {c.name:<{width}} {c.summary}" for c in SERVER_COMMANDS]
    by_dist: dict[str, list[str]] = {}
    for name, entry in sorted(_entry_points().items()):
        dist = entry.dist.name if entry.dist is not None else "another package"
        try:
            summary = _summary(entry.load())
        except ImportError as e:
            summary = f"(cannot load: {e})"
        by_dist.setdefault(dist, []).append(f"  {name:<{width}} {summary}")
    for dist, rows in sorted(by_dist.items()):
        lines += ["", f"commands of {dist}:", *rows]
    for dist in _missing_siblings():
        lines += ["", f"not installed here (install {dist}): {SIBLINGS[dist]}"]
    return "\n".join(lines)


def _summary(command: object) -> str:
    summary = getattr(command, "summary", "")
    return summary if isinstance(summary, str) else ""
