"""This process's id, known without a system call.

``os.getpid()`` is a ``getpid(2)`` on every call (glibc no longer caches it), and the send path
asks several times per message to notice that it runs in a forked child (ids, the commit
journal). :func:`pid` answers from a module variable that ``os.register_at_fork`` replaces in
a forked child before any of the child's own code runs.
"""

from __future__ import annotations

import os

_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def pid() -> int:
    """``os.getpid()``, without the system call."""
    return _pid
