"""One check of what a start or a reload would take in, shared by ``spoolq serve`` (at start and
before every reload, in its master) and ``spoolq check-config``: every mistake at once.

:func:`check` reads the config file once (:mod:`spoolq.settings.config_file`) and checks, in order:

1. the file itself: readable, YAML, a mapping (a file that is not stops here, with one line
   naming the line and column YAML stopped at);
2. its top-level keys (an unknown one is named with the closest known key: ``queue`` -> ``queues``);
3. every section, each reporting *every* mistake on a line of its own: identities and their
   permissions (:mod:`spoolq.access.auth`), ``queue_defaults`` (:mod:`spoolq.queues.queue_settings`), declared
   queues (:mod:`spoolq.config.declared_queues`), declared SNS topics and ``sns:``
   (:mod:`spoolq.config.declared_topics`); unknown keys at every level, with a "did you mean";
4. the listen policy with these identities (no open mode on a network address without
   ``allow_open``), then the TLS files (:mod:`spoolq.access.tls`).

The result (:class:`ConfigCheck`) holds one :class:`Finding` per line (``ok``, ``warning`` or
``FAILED``): a part with a mistake gets its ``FAILED`` lines and no ``ok`` line. When nothing
failed it also holds the parsed config, to be held as the config in force.

:func:`describe_changes` says what a reload changes between two accepted configs, in words an
operator reads in a log: identities by name (added, removed, permissions or keys changed),
declared queues by name, queue defaults, TLS files; never a key, a digest or a secret.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spoolq.access.auth import IDENTITY_KEYS, Authenticator, check_listen_policy, identity_name
from spoolq.settings.config_file import SECTIONS, read_config, unknown_keys
from spoolq.settings.server import ConfigRefused, Settings, SettingsError


@dataclass(frozen=True)
class Finding:
    """One line of a check: ``status`` is ``ok``, ``warning`` or ``FAILED``; ``part`` says which
    check it belongs to (``config``, ``listen``, ``tls``)."""

    status: str
    text: str
    part: str = "config"

    @property
    def failed(self) -> bool:
        return self.status == "FAILED"


@dataclass(frozen=True)
class ConfigCheck:
    """What :func:`check` found."""

    findings: tuple[Finding, ...]
    #: the parsed config file when nothing failed ({} without a file), else None
    config: Mapping[str, Any] | None = None
    authenticator: Authenticator | None = None
    #: a fingerprint of the TLS files' contents ("" without TLS), to tell a renewal in the log
    tls_fingerprint: str = ""

    @property
    def problems(self) -> list[str]:
        return [f.text for f in self.findings if f.failed]

    @property
    def ok(self) -> bool:
        return not self.problems


def check(settings: Settings) -> ConfigCheck:
    """Every check of the config file, the listen policy and the TLS files of ``settings``."""
    findings: list[Finding] = []
    config, auth = _check_file(settings, findings)
    if auth is not None:
        _check_listen(settings, auth, findings)
    fingerprint = _check_tls(settings, auth, findings)
    failed = any(f.failed for f in findings)
    return ConfigCheck(tuple(findings), None if failed else config, None if failed else auth, fingerprint)


def _check_file(settings: Settings, findings: list[Finding]) -> tuple[Mapping[str, Any], Authenticator | None]:
    """The config file's lines; (the parsed file, its identities) — the identities None when the
    file or its identities have mistakes."""
    if settings.config is None:
        findings.append(Finding("ok", "no config file (open mode)"))
        return {}, Authenticator(None)
    try:
        config = read_config(settings.config)
    except ConfigRefused as e:
        findings.extend(Finding("FAILED", p) for p in e.problems)
        return {}, None
    problems = unknown_keys(config, SECTIONS, "config: ")
    auth = None
    try:
        auth = Authenticator.from_config(config)
    except ConfigRefused as e:
        problems += e.problems
    from spoolq.config.declared_queues import parse_declarations
    from spoolq.config.declared_topics import parse_section
    from spoolq.queues.queue_settings import format_duration, queue_defaults

    oks = []
    try:
        defaults = queue_defaults(config)
        if defaults.archive:
            oks.append(f"new queues keep an archive for {format_duration(defaults.archive_retention)}")
    except ConfigRefused as e:
        problems += e.problems
    try:
        declared = parse_declarations(config, settings)
        if declared:
            oks.append(f"{len(declared)} declared queues: {', '.join(q.store_name for q in declared)}"[:300])
    except ConfigRefused as e:
        problems += e.problems
    try:
        topics = parse_section(config, settings)
        if topics:
            oks.append(f"{len(topics)} declared topics: {', '.join(t.key.store_name for t in topics)}"[:300])
    except ConfigRefused as e:
        problems += e.problems
    if problems:
        findings.extend(Finding("FAILED", p) for p in problems)
        return config, None
    assert auth is not None
    findings.append(Finding("ok", f"config {settings.config} ({auth.summary()})"))
    findings.extend(Finding("warning", f"config: {note}") for note in auth.notes)
    findings.extend(Finding("ok", line) for line in oks)
    return config, auth


def _check_listen(settings: Settings, auth: Authenticator, findings: list[Finding]) -> None:
    disque = settings.disque_port or settings.disque_tls_port
    hosts = (settings.host, settings.disque_host) if disque else (settings.host,)
    try:
        check_listen_policy(settings, auth, hosts[1:])
    except SettingsError as e:
        findings.append(Finding("FAILED", f"listen policy: {e}", "listen"))
        return
    findings.append(Finding("ok", f"listen policy for {', '.join(dict.fromkeys(hosts))}", "listen"))


def _check_tls(settings: Settings, auth: Authenticator | None, findings: list[Finding]) -> str:
    """The TLS files' line (the first file that cannot be used is named); their fingerprint."""
    from spoolq.access.tls import TlsFileError, check_files, clear_text_problem

    try:
        described = check_files(settings)
    except TlsFileError as e:
        findings.append(Finding("FAILED", f"tls: {e}", "tls"))
        return ""
    if not described:
        return ""
    problem = clear_text_problem(settings, keys_configured=auth is not None and not auth.open)
    if problem is not None:
        findings.append(Finding("FAILED", f"tls: {problem}", "tls"))
        return ""
    findings.append(Finding("ok", described, "tls"))
    digest = hashlib.sha256()
    for path in (settings.certfile, settings.keyfile, settings.client_ca):
        if path is not None:
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# --- what a reload changes ----------------------------------------------------------------------


def describe_changes(old: ConfigCheck, new: ConfigCheck) -> list[str]:
    """What differs between two accepted checks, one phrase each (empty: nothing changed). Names
    identities and queues, never a key, a digest or a secret."""
    a, b = old.config or {}, new.config or {}
    out = _identity_changes(a, b)
    if a.get("anonymous") != b.get("anonymous"):
        out.append("anonymous permissions changed")
    legacy_a, legacy_b = a.get("sqs_credentials") or {}, b.get("sqs_credentials") or {}
    if legacy_a != legacy_b:
        out.append(f"top-level sqs_credentials changed ({len(legacy_a)} -> {len(legacy_b)} keys)")
    if a.get("queue_defaults") != b.get("queue_defaults"):
        out.append("queue_defaults changed")
    out += _queue_changes(a, b)
    out += _topic_changes(a, b)
    if old.tls_fingerprint != new.tls_fingerprint:
        out.append("TLS files changed (new HTTP workers serve with them)")
    return out


def _identities(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    entries = config.get("api_keys") or []
    return {identity_name(e, i): e for i, e in enumerate(entries) if isinstance(e, Mapping)}


def _identity_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    before, after = _identities(a), _identities(b)
    out = []
    added = [n for n in after if n not in before]
    removed = [n for n in before if n not in after]
    if added:
        out.append(f"identities added: {', '.join(added)}")
    if removed:
        out.append(f"identities removed: {', '.join(removed)}")
    for name in (n for n in after if n in before):
        what = [_what(k) for k in IDENTITY_KEYS if k != "name" and before[name].get(k) != after[name].get(k)]
        if what:
            out.append(f"identity {name}: {', '.join(dict.fromkeys(what))} changed")
    return out


def _what(key: str) -> str:
    return {"sha256": "API key", "key": "API key", "sqs_credentials": "SigV4 credentials"}.get(key, key)


def _queue_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    def declared(config: Mapping[str, Any]) -> dict[str, Any]:
        entries = config.get("queues") or []
        return {f"{e.get('door')}:{e.get('name')}": e for e in entries if isinstance(e, Mapping)}

    before, after = declared(a), declared(b)
    out = []
    for label, names in (("declared queues added", [n for n in after if n not in before]),
                         ("declared queues no longer declared (kept as they are)", [n for n in before if n not in after]),
                         ("declared queues changed", [n for n in after if n in before and after[n] != before[n]])):
        if names:
            out.append(f"{label}: {', '.join(n.split(':', 1)[1] for n in names)}")
    return out


def _topic_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    def declared(config: Mapping[str, Any]) -> dict[str, Any]:
        entries = config.get("topics") or []
        return {str(e.get("name")): e for e in entries if isinstance(e, Mapping)}

    before, after = declared(a), declared(b)
    out = []
    for label, names in (("declared topics added", [n for n in after if n not in before]),
                         ("declared topics no longer declared (kept as they are)", [n for n in before if n not in after]),
                         ("declared topics changed", [n for n in after if n in before and after[n] != before[n]])):
        if names:
            out.append(f"{label}: {', '.join(names)}")
    if a.get("sns") != b.get("sns"):
        out.append("sns changed (the HTTP endpoints SNS may deliver to)")
    return out
