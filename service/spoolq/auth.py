"""Identities and per-queue permissions, one model for every door, loaded once from the YAML config.

An **identity** is one entry of ``api_keys``. It may hold an EmoDB API key (used by the EmoDB
and MQ doors), SigV4 credentials (used by the SQS door), or both, and one list of permissions
that applies whichever door it comes through::

    api_keys:
      - name: producer                 # what logs and errors show instead of a secret
        sha256: 9f86d081884c7d65...    # hex SHA-256 of the EmoDB API key (preferred), or
        # key: the-plain-key           # the key itself (hashed at load)
        sqs_credentials:               # optional: SigV4 access keys of this identity
          - access_key_id: AKIAPRODUCER01
            secret_access_key: wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
        permissions: ["queue|post|orders", "queue|get_status|*"]
      - name: sqs-only                 # an identity may have SigV4 credentials and no API key
        sqs_credentials: [{access_key_id: AKIAWORKER, secret_access_key: "..."}]
        permissions: ["queue|poll,get_status|sqs:*:*:orders"]
    anonymous:                         # optional: permissions of EmoDB/MQ requests without a key
      permissions: []

A request to the EmoDB or MQ door names its API key in the ``X-BV-API-Key`` header or, when
that header is missing or empty, in the ``APIKey`` query parameter. API keys are kept only as
SHA-256 digests and never logged. SigV4 verification needs the secret itself, so secret access
keys are kept as written (protect the file like any credentials file).

Permissions are ``queue|<action>|<queue>`` with actions ``post``, ``poll``, ``get_status`` and
``admin`` (create, delete, purge and configure SQS queues, SQS move tasks). Each part may be
``*``, a glob (``orders-*``), or a comma list (``post,poll``); missing trailing parts mean
``*`` (``queue`` alone grants everything on queues). ``<queue>`` is the queue's name as the
EmoDB and MQ doors spell it in their URLs; an SQS queue ``q`` of account ``A`` in region ``R``
is ``sqs:A:R:q``, its store name, which is also how the EmoDB door names it (``*`` in a glob
also matches ``:``, so ``sqs:*:*:orders-*`` is every SQS queue whose name starts with
``orders-``). The same permission therefore covers an SQS queue through either door.

The legacy top-level ``sqs_credentials`` mapping (access key id -> secret) still loads: each
pair becomes an identity named ``sqs:<access key id>`` holding ``queue|*|sqs:*`` (every action
on every SQS queue, nothing on other doors' queues), which is what those keys could do before.

Modes. With no identity configured at all (no config, or one without ``api_keys`` and
``sqs_credentials``) the service runs **open**: every door allows every request. As soon as
one identity exists, every door authenticates: EmoDB and MQ requests need a key (or the
``anonymous`` grant), and every SQS request must be SigV4-signed by a configured access key
(a config with API keys but no SigV4 credentials therefore refuses every SQS request). Open
mode may only listen on a loopback address unless ``allow_open`` is set
(:func:`check_listen_policy`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from spoolq.server_settings import Settings, SettingsError

ACTIONS = ("post", "poll", "get_status", "admin")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ACCESS_KEY_ID = re.compile(r"[A-Za-z0-9_+=.@-]{1,128}")


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
        """The permission ``text``; :class:`SettingsError` naming the bad part when it breaks the grammar."""
        if not isinstance(text, str) or not text.strip():
            raise SettingsError(f"permission must be a non-empty string, got {text!r}")
        parts = text.strip().split("|")
        problem = permission_problem(parts)
        if problem is not None:
            raise SettingsError(f"permission {text.strip()!r}: {problem}")
        return cls(text, tuple(_Part(p) for p in parts))

    def implies(self, wanted: tuple[str, ...]) -> bool:
        for i, value in enumerate(wanted):
            if i >= len(self.parts):
                return True
            if not self.parts[i].matches(value):
                return False
        return True


#: one alternative of a permission's queue part: queue-name characters, ``*`` and ``?`` wildcards
_QUEUE_GLOB = re.compile(r"[A-Za-z0-9._:@*?-]{1,400}")


def permission_problem(parts: list[str]) -> str | None:
    """What is wrong with a permission split at ``|`` (``None``: it follows the grammar).

    The grammar: ``queue[|<actions>[|<queues>]]``, or ``*``; ``<actions>`` is a comma list of
    ``post``, ``poll``, ``get_status``, ``admin`` or globs matching at least one of them;
    ``<queues>`` a comma list of queue names with ``*``/``?`` wildcards.
    """
    if len(parts) > 3:
        return f"{len(parts)} parts; the form is queue|<action>|<queue> (three parts at most)"
    resource = parts[0].strip()
    if resource not in ("queue", "*"):
        hint = " (parts are separated by '|')" if ":" in resource or "," in resource else ""
        return f"the first part {resource!r} must be 'queue' (or '*'){hint}"
    if len(parts) > 1:
        for action in (a.strip() for a in parts[1].split(",")):
            if not action:
                return "an empty action (actions: post, poll, get_status, admin, *)"
            if not any(fnmatch.fnmatchcase(a, action) for a in ACTIONS):
                return f"unknown action {action!r} (actions: {', '.join(ACTIONS)}, or *)"
    if len(parts) > 2:
        for queue in (q.strip() for q in parts[2].split(",")):
            if not _QUEUE_GLOB.fullmatch(queue):
                return (f"the queue {queue!r} is not a queue name or pattern "
                        "(letters, digits, . _ : @ - and the wildcards * ?)")
    return None


#: answers of :meth:`Principal.can` kept per identity (then the cache starts over)
_DECIDED_MAX = 4096


@dataclass(frozen=True)
class Principal:
    name: str
    permissions: tuple[Permission, ...]
    #: (action, queue) -> allowed: permissions never change in a running process, and matching
    #: them (globs, comma lists) costs several regular-expression matches per request
    _decided: dict[tuple[str, str], bool] = field(default_factory=dict, compare=False, repr=False)

    def can(self, action: str, queue: str) -> bool:
        key = (action, queue)
        allowed = self._decided.get(key)
        if allowed is None:
            wanted = ("queue", action, queue)
            allowed = any(p.implies(wanted) for p in self.permissions)
            if len(self._decided) >= _DECIDED_MAX:
                self._decided.clear()
            self._decided[key] = allowed
        return allowed


OPEN = Principal("open", (Permission.parse("*"),))


@dataclass(frozen=True)
class SigningIdentity:
    """What SigV4 needs for one access key id: the secret and whose key it is."""

    secret: str
    principal: Principal


class Authenticator:
    """Resolves a request's credentials to a :class:`Principal` (or ``None`` for "not authorized")."""

    def __init__(self, keys: Mapping[str, Principal] | None, anonymous: Principal | None = None,
                 signing: Mapping[str, SigningIdentity] | None = None) -> None:
        self._keys = dict(keys) if keys is not None else None
        self._anonymous = anonymous
        self._signing = dict(signing or {})
        #: remarks for the start-up banner (deprecated config forms)
        self.notes: list[str] = []

    @property
    def open(self) -> bool:
        """No identity is configured: every door allows every request."""
        return self._keys is None and not self._signing

    def principal(self, header_key: str | None, query_key: str | None) -> Principal | None:
        """The identity of an EmoDB/MQ request's API key (``OPEN`` in open mode)."""
        if self.open:
            return OPEN
        key = header_key or query_key
        if not key:
            return self._anonymous
        return (self._keys or {}).get(hash_key(key))

    def signing_identity(self, access_key_id: str) -> SigningIdentity | None:
        """The secret and principal of a SigV4 access key id (``None``: unknown key)."""
        return self._signing.get(access_key_id)

    def summary(self) -> str:
        if self.open:
            return "open (no credentials configured)"
        return (f"authenticated ({len(self._keys or {})} API keys, {len(self._signing)} SigV4 access keys; "
                "SQS requests must be SigV4-signed)")

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        if settings.config is None:
            return cls(None)
        return cls.from_config(load_config(settings.config))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Authenticator:
        entries = config.get("api_keys")
        legacy = config.get("sqs_credentials")
        if entries is None and not legacy:
            return cls(None)
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            raise SettingsError("config: api_keys must be a list")
        keys: dict[str, Principal] = {}
        signing: dict[str, SigningIdentity] = {}
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise SettingsError(f"config: api_keys[{i}] must be a mapping")
            unknown = set(entry) - {"name", "sha256", "key", "sqs_credentials", "permissions"}
            if unknown:
                raise SettingsError(f"config: api_keys[{i}] has unknown fields: {', '.join(sorted(map(str, unknown)))}")
            name = str(entry.get("name") or f"key{i}")
            principal = Principal(name, _permissions(entry.get("permissions", []), f"api_keys[{i}]"))
            has_key = "sha256" in entry or "key" in entry
            if has_key:
                digest = _digest(entry, i)
                if digest in keys:
                    raise SettingsError(f"config: api_keys[{i}] ({name}) repeats another key")
                keys[digest] = principal
            creds = entry.get("sqs_credentials")
            if creds is None and not has_key:
                raise SettingsError(f"config: api_keys[{i}] ({name}) needs sha256 (or key), "
                                    "sqs_credentials, or both")
            if creds is not None:
                _add_signing(signing, creds, principal, f"api_keys[{i}].sqs_credentials")
        auth_notes: list[str] = []
        if legacy:
            if not isinstance(legacy, dict):
                raise SettingsError("config: sqs_credentials (top level) must map access key ids to secrets")
            for access_key, secret in legacy.items():
                principal = Principal(f"sqs:{access_key}", (Permission.parse("queue|*|sqs:*"),))
                _add_signing(signing, [{"access_key_id": access_key, "secret_access_key": secret}], principal,
                             "sqs_credentials")
            auth_notes.append("top-level sqs_credentials is deprecated: each key may do everything on every "
                              "SQS queue; move them into api_keys entries with permissions")
        anonymous = None
        anon = config.get("anonymous")
        if anon is not None:
            if not isinstance(anon, dict):
                raise SettingsError("config: anonymous must be a mapping")
            anonymous = Principal("anonymous", _permissions(anon.get("permissions", []), "anonymous"))
        auth = cls(keys, anonymous, signing)
        auth.notes = auth_notes
        return auth


def _add_signing(signing: dict[str, SigningIdentity], creds: Any, principal: Principal, where: str) -> None:
    if not isinstance(creds, list):
        raise SettingsError(f"config: {where} must be a list of {{access_key_id, secret_access_key}}")
    for j, cred in enumerate(creds):
        if not isinstance(cred, dict) or set(cred) != {"access_key_id", "secret_access_key"}:
            raise SettingsError(f"config: {where}[{j}] must have exactly access_key_id and secret_access_key")
        key_id, secret = cred["access_key_id"], cred["secret_access_key"]
        if not isinstance(key_id, str) or not _ACCESS_KEY_ID.fullmatch(key_id):
            raise SettingsError(f"config: {where}[{j}].access_key_id must be 1-128 of A-Z a-z 0-9 _ + = . @ -")
        if not isinstance(secret, str) or not secret:
            raise SettingsError(f"config: {where}[{j}].secret_access_key must be a non-empty string")
        if key_id in signing:
            raise SettingsError(f"config: {where}[{j}]: access key id {key_id} is configured twice")
        signing[key_id] = SigningIdentity(secret, principal)


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
    out = []
    for j, text in enumerate(raw):
        try:
            out.append(Permission.parse(text))
        except SettingsError as e:
            raise SettingsError(f"config: {where}.permissions[{j}]: {e}") from None
    return tuple(out)


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
    """Refuse to serve open (no credentials: every door unauthenticated) on a non-loopback address
    unless ``allow_open``. With any identity configured every door authenticates (an SQS door
    without SigV4 credentials refuses every request), so no door is ever open by omission."""
    if not authenticator.open or settings.allow_open:
        return
    for host in (settings.host, *hosts):
        if not is_loopback(host):
            raise SettingsError(
                f"refusing to listen on {host} without credentials: add api_keys to a --config file, "
                "or pass --allow-open to serve an open queue on a network address")
