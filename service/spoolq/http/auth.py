"""API keys and per-queue permissions (EmoDB style), loaded once from the YAML config file.

A request names its key in the ``X-BV-API-Key`` header or, when that header is missing or
empty, in the ``APIKey`` query parameter. Keys are kept only as SHA-256 digests; a key is
never logged, and the config may hold digests instead of keys. Config format::

    api_keys:
      - name: producer                 # what logs show instead of the key
        sha256: 9f86d081884c7d65...    # hex SHA-256 of the key (preferred), or
        # key: the-plain-key           # the key itself (hashed at load)
        permissions: ["queue|post|orders", "queue|get_status|*"]
    anonymous:                         # optional: permissions of requests without a key
      permissions: []

Permissions are ``queue|<action>|<queue>`` with actions ``post``, ``poll``, ``get_status``.
Each part may be ``*``, a glob (``orders-*``), or a comma list (``post,poll``); missing
trailing parts mean ``*`` (``queue`` alone grants everything on queues).

Without a config file (or one without ``api_keys``) the service runs **open**: every
request is allowed. Open mode may only listen on a loopback address unless
``allow_open`` is set (checked by :func:`check_listen_policy`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from spoolq.settings import Settings, SettingsError

ACTIONS = ("post", "poll", "get_status")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def hash_key(key: str) -> str:
    """The hex SHA-256 digest a config stores for ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class _Part:
    __slots__ = ("_any", "_globs")

    def __init__(self, text: str) -> None:
        alternatives = [a.strip() for a in text.split(",")]
        self._any = any(a == "*" for a in alternatives)
        self._globs = [re.compile(fnmatch.translate(a.replace("[", "[[]"))) for a in alternatives]

    def matches(self, value: str) -> bool:
        return self._any or any(g.match(value) for g in self._globs)


@dataclass(frozen=True)
class Permission:
    text: str
    parts: tuple[_Part, ...]

    @classmethod
    def parse(cls, text: str) -> Permission:
        if not isinstance(text, str) or not text.strip():
            raise SettingsError(f"permission must be a non-empty string, got {text!r}")
        return cls(text, tuple(_Part(p) for p in text.strip().split("|")))

    def implies(self, wanted: tuple[str, ...]) -> bool:
        for i, value in enumerate(wanted):
            if i >= len(self.parts):
                return True
            if not self.parts[i].matches(value):
                return False
        return True


@dataclass(frozen=True)
class Principal:
    name: str
    permissions: tuple[Permission, ...]

    def can(self, action: str, queue: str) -> bool:
        wanted = ("queue", action, queue)
        return any(p.implies(wanted) for p in self.permissions)


OPEN = Principal("open", (Permission.parse("*"),))


class Authenticator:
    """Resolves a request's key to a :class:`Principal` (or ``None`` for "not authorized")."""

    def __init__(self, keys: Mapping[str, Principal] | None, anonymous: Principal | None = None) -> None:
        self._keys = dict(keys) if keys is not None else None
        self._anonymous = anonymous

    @property
    def open(self) -> bool:
        return self._keys is None

    def principal(self, header_key: str | None, query_key: str | None) -> Principal | None:
        if self._keys is None:
            return OPEN
        key = header_key or query_key
        if not key:
            return self._anonymous
        return self._keys.get(hash_key(key))

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        if settings.config is None:
            return cls(None)
        return cls.from_config(load_config(settings.config))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Authenticator:
        entries = config.get("api_keys")
        if entries is None:
            return cls(None)
        if not isinstance(entries, list):
            raise SettingsError("config: api_keys must be a list")
        keys: dict[str, Principal] = {}
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise SettingsError(f"config: api_keys[{i}] must be a mapping")
            name = str(entry.get("name") or f"key{i}")
            digest = _digest(entry, i)
            if digest in keys:
                raise SettingsError(f"config: api_keys[{i}] ({name}) repeats another key")
            keys[digest] = Principal(name, _permissions(entry.get("permissions", []), f"api_keys[{i}]"))
        anonymous = None
        anon = config.get("anonymous")
        if anon is not None:
            if not isinstance(anon, dict):
                raise SettingsError("config: anonymous must be a mapping")
            anonymous = Principal("anonymous", _permissions(anon.get("permissions", []), "anonymous"))
        return cls(keys, anonymous)


def _digest(entry: Mapping[str, Any], i: int) -> str:
    if "sha256" in entry:
        digest = str(entry["sha256"]).strip().lower()
        if not _HEX64.fullmatch(digest):
            raise SettingsError(f"config: api_keys[{i}].sha256 must be 64 hex digits")
        return digest
    key = entry.get("key")
    if not isinstance(key, str) or not key:
        raise SettingsError(f"config: api_keys[{i}] needs sha256 (or key)")
    return hash_key(key)


def _permissions(raw: Any, where: str) -> tuple[Permission, ...]:
    if not isinstance(raw, list):
        raise SettingsError(f"config: {where}.permissions must be a list")
    return tuple(Permission.parse(p) for p in raw)


def load_config(path: Path) -> Mapping[str, Any]:
    """The parsed YAML config (``{}`` for an empty file)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise SettingsError(f"cannot read config {path}: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SettingsError(f"config {path} is not valid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"config {path} must be a mapping at the top level")
    return data


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_listen_policy(settings: Settings, authenticator: Authenticator, hosts: Iterable[str] = ()) -> None:
    """Refuse to serve open (no API keys) on a non-loopback address unless ``allow_open``."""
    if not authenticator.open or settings.allow_open:
        return
    for host in (settings.host, *hosts):
        if not is_loopback(host):
            raise SettingsError(
                f"refusing to listen on {host} without API keys: add api_keys to a --config file, "
                "or pass --allow-open to serve an open queue on a network address")
