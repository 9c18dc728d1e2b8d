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

SNS topics have permissions of their own, ``topic|<action>|<topic>``, with actions ``publish``
(Publish, PublishBatch), ``subscribe`` (Subscribe, ConfirmSubscription, and Unsubscribe or a change of
a subscription of the topic), ``get_status`` (read a topic, its attributes, tags and subscriptions)
and ``admin`` (create, delete, configure and tag topics). ``<topic>`` is ``sns:A:R:name`` for topic
``name`` of account ``A`` in region ``R`` (its ARN ``arn:aws:sns:R:A:name``), with the same globs:
``topic|publish|sns:*:*:orders-*``. ``topic`` alone grants everything on topics, ``*`` everything on
queues and topics, and ``queue`` nothing on topics. A subscription that delivers to a queue also needs
``post`` on that queue (the subscriber could send to it through the topic).

The legacy top-level ``sqs_credentials`` mapping (access key id -> secret) still loads: each
pair becomes an identity named ``sqs:<access key id>`` holding ``queue|*|sqs:*`` (every action
on every SQS queue, nothing on other doors' queues), which is what those keys could do before.

A second queue. A setting or an action of one queue may name another that messages will then
arrive in: a dead-letter queue (EmoDB/console ``dead_letter``, SQS ``RedrivePolicy``, at create or
change), a move's destination (EmoDB ``_move``, the console's move and redrive, SQS
``StartMessageMoveTask``, whose default destinations are the dead-letter queue's source queues).
The caller needs ``post`` on that queue too, as if it sent there itself: every door asks
:func:`may_send_into`, before it looks the queue up (a refusal never tells whether another team's
queue exists). A queue named to *allow* others (an SQS ``RedriveAllowPolicy``'s source queues)
receives nothing and needs nothing. The config file's declared queues are the operator's (whoever
may edit the file and reload the service), so their dead-letter queues are not checked.

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
from typing import Any

from spoolq.queues.names import permission_name
from spoolq.settings.config_file import load_config, unknown_keys
from spoolq.settings.server import ConfigRefused, Settings, SettingsError

ACTIONS = ("post", "poll", "get_status", "admin")
#: the actions of the ``topic`` resource (SNS topics)
TOPIC_ACTIONS = ("publish", "subscribe", "get_status", "admin")
#: each resource a permission may name, and its actions
RESOURCE_ACTIONS = {"queue": ACTIONS, "topic": TOPIC_ACTIONS}
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

    The grammar: ``queue[|<actions>[|<queues>]]``, ``topic[|<actions>[|<topics>]]``, or ``*``;
    ``<actions>`` is a comma list of the resource's actions (queues: ``post``, ``poll``,
    ``get_status``, ``admin``; topics: ``publish``, ``subscribe``, ``get_status``, ``admin``) or
    globs matching at least one of them; ``<queues>`` a comma list of names with ``*``/``?`` wildcards.
    """
    if len(parts) > 3:
        return f"{len(parts)} parts; the form is queue|<action>|<queue> (three parts at most)"
    resource = parts[0].strip()
    if resource not in ("queue", "topic", "*"):
        hint = " (parts are separated by '|')" if ":" in resource or "," in resource else ""
        return f"the first part {resource!r} must be 'queue' or 'topic' (or '*'){hint}"
    if len(parts) > 1:
        actions = RESOURCE_ACTIONS.get(resource, ACTIONS + TOPIC_ACTIONS)
        for action in (a.strip() for a in parts[1].split(",")):
            if not action:
                return f"an empty action (actions: {', '.join(actions)}, *)"
            if not any(fnmatch.fnmatchcase(a, action) for a in actions):
                return f"unknown action {action!r} (actions: {', '.join(actions)}, or *)"
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
    #: (action, queue) -> allowed (another resource's action as ``<resource>|<action>``): permissions never change in a running process, and matching
    #: them (globs, comma lists) costs several regular-expression matches per request
    _decided: dict[tuple[str, str], bool] = field(default_factory=dict, compare=False, repr=False)

    def can(self, action: str, queue: str, resource: str = "queue") -> bool:
        """Whether this identity may do ``action`` on ``queue`` (``resource="topic"``: on that topic)."""
        key = (action, queue) if resource == "queue" else (f"{resource}|{action}", queue)
        allowed = self._decided.get(key)
        if allowed is None:
            wanted = (resource, action, queue)
            allowed = any(p.implies(wanted) for p in self.permissions)
            if len(self._decided) >= _DECIDED_MAX:
                self._decided.clear()
            self._decided[key] = allowed
        return allowed


OPEN = Principal("open", (Permission.parse("*"),))

#: the permission a caller needs on a second queue it makes messages arrive in
SECOND_QUEUE_PERMISSION = "post"


def may_send_into(who: Principal | None, store_name: str) -> bool:
    """Whether ``who`` (``None``: open mode) may name the queue ``store_name`` as a second queue of a
    setting or an action, one that messages will arrive in (see "A second queue" above): the
    permission to send there. Every door asks this, and so must every new setting that names a
    queue messages go to (an SNS subscription's queue endpoint)."""
    return who is None or who.can(SECOND_QUEUE_PERMISSION, permission_name(store_name))


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
        """The identities of a parsed config file; :class:`ConfigRefused` with one line for every
        mistake in ``api_keys``, ``sqs_credentials`` and ``anonymous`` (all of them, not the first)."""
        entries = config.get("api_keys")
        legacy = config.get("sqs_credentials")
        problems: list[str] = []
        anonymous = _anonymous(config.get("anonymous"), problems)
        if entries is None and not legacy:
            if problems:
                raise ConfigRefused(problems)
            return cls(None)
        if entries is None:
            entries = []
        keys: dict[str, Principal] = {}
        signing: dict[str, SigningIdentity] = {}
        if not isinstance(entries, list):
            problems.append("config: api_keys must be a list of identities (- name: ..., permissions: [...])")
            entries = []
        for i, entry in enumerate(entries):
            _add_identity(entry, i, keys, signing, problems)
        auth_notes: list[str] = []
        if legacy:
            if not isinstance(legacy, dict):
                problems.append("config: sqs_credentials (top level) must map access key ids to secrets")
            else:
                for access_key, secret in legacy.items():
                    principal = Principal(f"sqs:{access_key}", (Permission.parse("queue|*|sqs:*"),))
                    _add_signing(signing, [{"access_key_id": access_key, "secret_access_key": secret}], principal,
                                 "sqs_credentials", problems)
                auth_notes.append("top-level sqs_credentials is deprecated: each key may do everything on every "
                                  "SQS queue; move them into api_keys entries with permissions")
        if problems:
            raise ConfigRefused(problems)
        auth = cls(keys, anonymous, signing)
        auth.notes = auth_notes
        return auth


#: the keys of one ``api_keys`` entry
IDENTITY_KEYS = ("name", "sha256", "key", "sqs_credentials", "permissions")


def identity_name(entry: Mapping[str, Any], i: int) -> str:
    """How logs name the ``i``-th identity: its ``name``, else ``key<i>``."""
    return str(entry.get("name") or f"key{i}")


def _add_identity(entry: Any, i: int, keys: dict[str, Principal], signing: dict[str, SigningIdentity],
                  problems: list[str]) -> None:
    """Add the ``i``-th entry of ``api_keys`` to ``keys`` and ``signing``, its mistakes to ``problems``."""
    if not isinstance(entry, dict):
        problems.append(f"config: api_keys[{i}] must be a mapping (name, sha256 or key, permissions)")
        return
    problems.extend(unknown_keys(entry, IDENTITY_KEYS, f"config: api_keys[{i}]: "))
    name = identity_name(entry, i)
    principal = Principal(name, _permissions(entry.get("permissions", []), f"api_keys[{i}]", problems))
    has_key = "sha256" in entry or "key" in entry
    if has_key:
        digest = _digest(entry, i, problems)
        if digest is not None and digest in keys:
            problems.append(f"config: api_keys[{i}] ({name}) repeats another key")
        elif digest is not None:
            keys[digest] = principal
    creds = entry.get("sqs_credentials")
    if creds is None and not has_key:
        problems.append(f"config: api_keys[{i}] ({name}) needs sha256 (or key), sqs_credentials, or both")
    if creds is not None:
        _add_signing(signing, creds, principal, f"api_keys[{i}].sqs_credentials", problems)


def _anonymous(anon: Any, problems: list[str]) -> Principal | None:
    if anon is None:
        return None
    if not isinstance(anon, dict):
        problems.append("config: anonymous must be a mapping (permissions: [...])")
        return None
    problems.extend(unknown_keys(anon, ("permissions",), "config: anonymous: "))
    return Principal("anonymous", _permissions(anon.get("permissions", []), "anonymous", problems))


def _add_signing(signing: dict[str, SigningIdentity], creds: Any, principal: Principal, where: str,
                 problems: list[str]) -> None:
    if not isinstance(creds, list):
        problems.append(f"config: {where} must be a list of {{access_key_id, secret_access_key}}")
        return
    for j, cred in enumerate(creds):
        if not isinstance(cred, dict) or set(cred) != {"access_key_id", "secret_access_key"}:
            unknown = unknown_keys(cred, ("access_key_id", "secret_access_key"), f"config: {where}[{j}]: ") \
                if isinstance(cred, dict) else []
            problems.extend(unknown or [f"config: {where}[{j}] must have exactly access_key_id and "
                                        "secret_access_key"])
            continue
        key_id, secret = cred["access_key_id"], cred["secret_access_key"]
        if not isinstance(key_id, str) or not _ACCESS_KEY_ID.fullmatch(key_id):
            problems.append(f"config: {where}[{j}].access_key_id must be 1-128 of A-Z a-z 0-9 _ + = . @ -")
        elif not isinstance(secret, str) or not secret:
            problems.append(f"config: {where}[{j}].secret_access_key must be a non-empty string")
        elif key_id in signing:
            problems.append(f"config: {where}[{j}]: access key id {key_id} is configured twice")
        else:
            signing[key_id] = SigningIdentity(secret, principal)


def _digest(entry: Mapping[str, Any], i: int, problems: list[str]) -> str | None:
    if "sha256" in entry:
        digest = str(entry["sha256"]).strip().lower()
        if not _HEX64.fullmatch(digest):
            problems.append(f"config: api_keys[{i}].sha256 must be 64 hex digits")
            return None
        return digest
    key = entry.get("key")
    if not isinstance(key, str) or not key:
        problems.append(f"config: api_keys[{i}].key must be a non-empty string (or give sha256)")
        return None
    return hash_key(key)


def _permissions(raw: Any, where: str, problems: list[str]) -> tuple[Permission, ...]:
    if not isinstance(raw, list):
        problems.append(f"config: {where}.permissions must be a list of permissions, e.g. "
                        "[\"queue|post|orders\"]")
        return ()
    out = []
    for j, text in enumerate(raw):
        try:
            out.append(Permission.parse(text))
        except SettingsError as e:
            problems.append(f"config: {where}.permissions[{j}]: {e}")
    return tuple(out)


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
