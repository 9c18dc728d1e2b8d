"""The server's settings: one frozen :class:`Settings` from CLI flags and environment, checked at start.

Every component receives the settings explicitly; nothing reads the environment later.
Environment variables are ``SPOOLQ_<FIELD>`` in upper case (``SPOOLQ_ROOT``,
``SPOOLQ_PORT``, ``SPOOLQ_FSYNC``, ...). Flags win over the environment, the
environment wins over the defaults.

The data directory (``root``) when neither ``--root`` nor ``SPOOLQ_ROOT`` names one is chosen
as comparable services choose theirs (:func:`default_root`), never inside the installed package
or its virtual environment, which a reinstall deletes:

* ``$STATE_DIRECTORY`` when systemd sets it (a unit with ``StateDirectory=spoolq``);
* ``/var/lib/spoolq`` when run as root, or as a systemd service (``$INVOCATION_ID``);
* ``$XDG_DATA_HOME/spoolq`` (``~/.local/share/spoolq``) for anyone else.

The container image sets ``SPOOLQ_ROOT=/data``; ``scripts/serve`` passes ``--root ./data`` of
the checkout.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

DEFAULT_PORT = 8480
#: the data directory of a service run by root or by systemd (the FHS's place for a service's state)
SYSTEM_ROOT = Path("/var/lib/spoolq")


class SettingsError(ValueError):
    """A setting with a bad value; the message says which and why."""


class ConfigRefused(SettingsError):
    """A config file with mistakes: :attr:`problems` holds one line for each, in the file's order."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__(problems[0] if len(problems) == 1 else
                         f"{problems[0]} (and {len(problems) - 1} more mistakes)")
        self.problems = list(problems)


@dataclass(frozen=True)
class RootChoice:
    """The data directory used when none is given, and why it is that one (said on start)."""

    path: Path
    reason: str


def default_root(environ: Mapping[str, str] | None = None, euid: int | None = None) -> RootChoice:
    """The data directory when neither ``--root`` nor ``SPOOLQ_ROOT`` names one (see the module doc)."""
    env = os.environ if environ is None else environ
    uid = os.geteuid() if euid is None else euid
    state = env.get("STATE_DIRECTORY", "").split(":")[0]
    if state:
        return RootChoice(Path(state), "systemd's StateDirectory")
    if uid == 0:
        return RootChoice(SYSTEM_ROOT, "the default when run as root")
    if env.get("INVOCATION_ID"):
        return RootChoice(SYSTEM_ROOT, "the default of a systemd service")
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return RootChoice(Path(xdg) / "spoolq", "$XDG_DATA_HOME/spoolq, the default for a user")
    home = env.get("HOME") or str(Path.home())
    return RootChoice(Path(home) / ".local" / "share" / "spoolq", "~/.local/share/spoolq, the default for a user")


@dataclass(frozen=True)
class Settings:
    root: Path = field(default_factory=lambda: default_root().path)
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 4  # gunicorn worker processes (MQ --workers)
    threads: int = 32  # requests one worker handles at once (gthread); a waiting long poll holds none
    peers: int = 0  # --peers: lanes of each bucket - 1 (0: one per live poller of the data directory)
    fsync: bool = True  # fsync=always (True) or never (False, for tmpfs / in-memory roots)
    #: how sends are made durable: syncfs or journal (local disks), fsync (NFS, FUSE); "" = the one that
    #: fits the root's file system (spoolq.store.filesystems)
    flush: str = ""
    force_flush: bool = False  # use --flush even where it may not reach stable storage (network/FUSE)
    node_id: str = ""  # unique per spoolq process group sharing a root; default: hostname
    config: Path | None = None  # YAML file with API keys and SQS credentials
    allow_open: bool = False  # listen on a non-loopback address with no credentials configured
    sqs_account_id: str = "123456789012"
    sqs_region: str = "us-east-1"
    max_body_bytes: int = 2 * 1024 * 1024  # request bodies above this get 413 before being read
    disque_port: int = 0  # Disque (RESP) listener port; 0 = off (Disque's own default is 7711)
    disque_host: str = "127.0.0.1"  # Disque listener address (same open-mode rule as host)
    #: TLS (spoolq.access.tls): with a certificate the HTTP port speaks only HTTPS, and Disque over TLS is served
    #: on disque_tls_port; client_ca asks every client for a certificate it signed (mutual TLS)
    certfile: Path | None = None  # PEM certificate chain, the server's own certificate first
    keyfile: Path | None = None  # its PEM private key (default: in certfile)
    client_ca: Path | None = None  # PEM bundle of the CAs whose client certificates are accepted
    disque_tls_port: int = 0  # Disque (RESP) over TLS; 0 = off (Redis's tls-port)
    #: hostile clients (spoolq.http.gunicorn.heads): seconds a request head has to arrive in, and the connections
    #: one worker holds open at most (parked long polls included)
    header_timeout: float = 5.0
    max_connections: int = 10_000
    #: the root's headroom (spoolq.observability.readiness): /readyz warns under these shares of the file system's
    #: bytes and inodes (and is 503 once the largest message no longer fits)
    low_space_percent: float = 10.0
    low_inodes_percent: float = 5.0

    def __post_init__(self) -> None:
        if not 1 <= self.port <= 65535:
            raise SettingsError(f"port must be 1..65535, got {self.port}")
        if not 0 <= self.disque_port <= 65535:
            raise SettingsError(f"disque_port must be 0..65535 (0 = off), got {self.disque_port}")
        if not 0 <= self.disque_tls_port <= 65535:
            raise SettingsError(f"disque_tls_port must be 0..65535 (0 = off), got {self.disque_tls_port}")
        if self.disque_tls_port and self.disque_tls_port == self.disque_port:
            raise SettingsError(f"disque_port and disque_tls_port are both {self.disque_port}: one port speaks "
                                "one protocol (set disque_port 0 for TLS only)")
        if self.certfile is None:
            for name in ("keyfile", "client_ca", "disque_tls_port"):
                if getattr(self, name):
                    raise SettingsError(f"{name} needs certfile (the server's TLS certificate)")
        if not 1 <= self.workers <= 256:
            raise SettingsError(f"workers must be 1..256, got {self.workers}")
        if not 1 <= self.threads <= 1024:
            raise SettingsError(f"threads must be 1..1024, got {self.threads}")
        if not 0 <= self.peers <= 1024:
            raise SettingsError(f"peers must be 0..1024, got {self.peers}")
        if not (len(self.sqs_account_id) == 12 and self.sqs_account_id.isdigit()):
            raise SettingsError(f"sqs_account_id must be 12 digits, got {self.sqs_account_id!r}")
        if self.flush not in ("", "journal", "syncfs", "fsync"):
            raise SettingsError(f"flush must be journal, syncfs or fsync, got {self.flush!r}")
        if not 0.5 <= self.header_timeout <= 3600:
            raise SettingsError(f"header_timeout must be 0.5..3600 seconds, got {self.header_timeout:g}")
        if not 16 <= self.max_connections <= 1_000_000:
            raise SettingsError(f"max_connections must be 16..1000000, got {self.max_connections}")
        for name in ("low_space_percent", "low_inodes_percent"):
            if not 0 <= getattr(self, name) <= 100:
                raise SettingsError(f"{name} must be 0..100, got {getattr(self, name):g}")
        if self.max_body_bytes < 64 * 1024:
            raise SettingsError("max_body_bytes must be at least 65536")
        if not self.node_id:
            object.__setattr__(self, "node_id", socket.gethostname() or "node")

    def with_changes(self, **changes: Any) -> Settings:
        return replace(self, **changes)


#: file descriptors a worker keeps for itself below its open-file limit (the store's files, inotify, pipes)
RESERVED_FDS = 256


def connections_within(wanted: int, fd_limit: int | None) -> int:
    """``max_connections`` as one worker can hold them with ``fd_limit`` open files (None: no limit)."""
    return wanted if fd_limit is None else max(16, min(wanted, fd_limit - RESERVED_FDS))


#: the settings that name files or directories (``None`` by default)
PATH_FIELDS = ("root", "config", "certfile", "keyfile", "client_ca")

_BOOL_TRUE = {"1", "true", "yes", "on", "always"}
_BOOL_FALSE = {"0", "false", "no", "off", "never"}


def _coerce(name: str, raw: str, current: Any) -> Any:
    if isinstance(current, bool):
        low = raw.strip().lower()
        if low in _BOOL_TRUE:
            return True
        if low in _BOOL_FALSE:
            return False
        raise SettingsError(f"{name} must be a boolean (always/never, true/false), got {raw!r}")
    if isinstance(current, int):
        try:
            return int(raw)
        except ValueError:
            raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if isinstance(current, float):
        try:
            number = float(raw)
        except ValueError:
            raise SettingsError(f"{name} must be a number, got {raw!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise SettingsError(f"{name} must be a finite number, got {raw!r}")
        return number
    if isinstance(current, Path) or name in PATH_FIELDS:
        return Path(raw)
    return raw


def load_settings(overrides: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from defaults, then ``SPOOLQ_*`` environment, then ``overrides`` (flags)."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {f.name: f.default for f in fields(Settings) if f.name != "root"}
    values["root"] = default_root(env).path
    for f in fields(Settings):
        raw = env.get(f"SPOOLQ_{f.name.upper()}")
        if raw is not None and raw != "":
            values[f.name] = _coerce(f.name, raw, values[f.name])
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key not in values:
            raise SettingsError(f"unknown setting {key!r}")
        values[key] = _coerce(key, value, values[key]) if isinstance(value, str) else value
    return Settings(**values)


def root_origin(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> str:
    """Why the data directory of :func:`load_settings` with these arguments is the one it is."""
    env = os.environ if environ is None else environ
    if (overrides or {}).get("root") is not None:
        return "--root"
    if env.get("SPOOLQ_ROOT"):
        return "SPOOLQ_ROOT"
    return default_root(env).reason
