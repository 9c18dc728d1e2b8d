"""The YAML config file (``--config``): read in one place, and held as the config in force.

Its sections, each parsed by the module that owns it::

    api_keys:        identities, their keys and permissions          (spoolq.access.auth)
    sqs_credentials: legacy SigV4 keys                                (spoolq.access.auth)
    anonymous:       permissions of requests without a key            (spoolq.access.auth)
    queue_defaults:  settings of queues created without them          (spoolq.queues.queue_settings)
    queues:          declared queues                                  (spoolq.config.declared_queues)
    topics:          declared SNS topics and their subscriptions      (spoolq.config.declared_topics)
    sns:             the HTTP endpoints SNS may deliver to            (spoolq.http.sns.webhooks)

:func:`read_config` reads and parses the file; a file that cannot be read, is not YAML, or is
not a mapping is refused with one line (:class:`~spoolq.settings.server.ConfigRefused`) naming
the line and column YAML stopped at. :func:`unknown_keys` is how every section reports a key it
does not know, with the closest known one (``unknown key 'queue' (did you mean 'queues'?)``).

**The config in force.** ``spoolq serve``'s master checks the file whole before it starts and
before every reload (:mod:`spoolq.config.check`), then :func:`hold`\\ s what it accepted.
:func:`load_config` answers with the held config for that path, in the master and in every
process it forks after (the HTTP workers): a worker that starts later (one replaced after it
died) serves with the config its siblings serve with, never with a file edited since and not
yet accepted. A process that holds nothing (``check-config``, plain gunicorn, tests) reads the
file.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from spoolq.settings.server import ConfigRefused

#: the top-level keys of the config file
SECTIONS = ("api_keys", "sqs_credentials", "anonymous", "queue_defaults", "queues", "topics", "sns")

#: path -> the config accepted for it by this process (or the master it was forked from)
_held: dict[Path, Mapping[str, Any]] = {}


def read_config(path: Path) -> dict[str, Any]:
    """The parsed file (``{}`` when empty); :class:`ConfigRefused` with one line when it cannot be
    read, is not YAML, or is not a mapping at the top level."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigRefused([f"config {path}: cannot be read ({e.strerror})"]) from None
    except UnicodeDecodeError:
        raise ConfigRefused([f"config {path}: is not UTF-8 text"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigRefused([f"config {path} is not valid YAML: {_yaml_problem(e)}"]) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigRefused([f"config {path} must be a mapping at the top level (api_keys:, queues:, ...)"])
    return data


def _yaml_problem(error: yaml.YAMLError) -> str:
    """YAML's reason in one line, with the line and column it names (1-based)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{problem}" + (f" ({context})" if context else "")


def hold(path: Path, config: Mapping[str, Any]) -> None:
    """Make ``config`` what :func:`load_config` answers for ``path`` in this process and the ones it
    forks from now on (the master, once it accepted the file)."""
    _held.clear()
    _held[Path(path)] = config


def load_config(path: Path) -> Mapping[str, Any]:
    """The config in force for ``path``: the held one, else the file as :func:`read_config` reads it."""
    held = _held.get(Path(path))
    return held if held is not None else read_config(path)


def unknown_keys(mapping: Mapping[Any, Any], known: Iterable[str], where: str) -> list[str]:
    """One line per key of ``mapping`` not in ``known``, with the closest known key when one is close."""
    known = tuple(known)
    out = []
    for key in mapping:
        if key in known:
            continue
        text = str(key)
        close = difflib.get_close_matches(text, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
        out.append(f"{where}unknown key {text[:60]!r}{hint}")
    return out
