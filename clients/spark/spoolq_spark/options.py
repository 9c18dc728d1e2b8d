"""The options of the ``spoolq`` data source: parsed once, checked at planning.

Spark hands a data source its options as a case-insensitive map of lower-cased keys and string
values. :func:`parse` turns that map into a frozen :class:`Options` for one mode (``write``,
``read`` for the peek snapshot, ``stream`` for the consuming stream) and raises
:class:`OptionError` naming the option for anything unknown, missing or out of range, so a job
fails while it is planned, before a single request is sent.

| option (any case)      | modes          | default                  | meaning |
|------------------------|----------------|--------------------------|---------|
| ``url``                | all            | ``$SPOOLQ_URL``, else ``http://127.0.0.1:8480`` | the service |
| ``queue``              | all            | required                 | queue name |
| ``apiKey``             | all            | ``$SPOOLQ_API_KEY``, else none | sent as ``X-BV-API-Key`` |
| ``dedup``              | all            | ``false``                | ``true``: the ``/dedupq/1`` door |
| ``timeout``            | all            | ``30``                   | seconds per HTTP request |
| ``retryTimeout``       | all            | ``60``                   | seconds to keep retrying 429/5xx/connection errors |
| ``batchSize``          | write          | ``500``                  | messages per ``sendbatch`` request (1..10000) |
| ``limit``              | read           | ``5000``                 | messages in the peek snapshot (1..5000) |
| ``claimTtl``           | stream         | ``300``                  | claim seconds (1..3600) |
| ``renewInterval``      | stream         | ``claimTtl / 3``         | seconds between renewals of the claims of unacknowledged batches |
| ``maxMessagesPerTrigger`` | stream      | ``10000``                | messages per micro-batch (``maxMessagesPerBatch`` is the same) |
| ``maxBytesPerTrigger`` | stream         | none                     | message bytes per micro-batch (soft: a partition stops claiming once past its share) |
| ``partitionSize``      | stream         | ``1000``                 | messages per Spark partition of a micro-batch (1..10000) |
| ``minPartitions``      | stream         | ``1``                    | at least this many partitions when a batch is planned |
| ``spoolDir``, ``pollSize`` | stream     | none                     | accepted and unused (earlier versions needed them) |
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8480"

MODES = ("write", "read", "stream")


class OptionError(ValueError):
    """A ``spoolq`` data source option is unknown, missing or invalid."""


@dataclass(frozen=True)
class Options:
    url: str
    queue: str
    api_key: str | None = None
    dedup: bool = False
    timeout: float = 30.0
    retry_timeout: float = 60.0
    batch_size: int = 500
    limit: int = 5000
    spool_dir: str | None = None  # accepted, unused
    claim_ttl: int = 300
    renew_interval: float = 100.0
    max_per_batch: int = 10_000
    max_bytes_per_batch: int | None = None
    poll_size: int = 1000  # accepted, unused
    partition_size: int = 1000
    min_partitions: int = 1

    @property
    def door(self) -> str:
        return "/dedupq/1" if self.dedup else "/queue/1"


def _int(lo: int, hi: int) -> Callable[[str, str], int]:
    def conv(name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise OptionError(f"spoolq option {name!r} must be an integer, got {raw!r}") from None
        if not lo <= value <= hi:
            raise OptionError(f"spoolq option {name!r} must be between {lo} and {hi}, got {value}")
        return value
    return conv


def _float(lo: float, hi: float) -> Callable[[str, str], float]:
    def conv(name: str, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise OptionError(f"spoolq option {name!r} must be a number of seconds, got {raw!r}") from None
        if not lo < value <= hi:
            raise OptionError(f"spoolq option {name!r} must be > {lo:g} and <= {hi:g}, got {raw!r}")
        return value
    return conv


def _bool(name: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low not in ("true", "false"):
        raise OptionError(f"spoolq option {name!r} must be 'true' or 'false', got {raw!r}")
    return low == "true"


def _url(name: str, raw: str) -> str:
    value = raw.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise OptionError(f"spoolq option {name!r} must be an http(s) URL, got {raw!r}")
    return value


def _queue(name: str, raw: str) -> str:
    value = raw.strip()
    if not value or "/" in value or len(value) > 255:
        raise OptionError(f"spoolq option {name!r} must be a queue name (1-255 characters, no '/'), got {raw!r}")
    return value


def _text(name: str, raw: str) -> str:
    if not raw:
        raise OptionError(f"spoolq option {name!r} must not be empty")
    return raw


# lower-cased option -> (field, converter, modes)
_SPEC: dict[str, tuple[str, Callable[[str, str], Any], tuple[str, ...], str]] = {
    "url": ("url", _url, MODES, "url"),
    "queue": ("queue", _queue, MODES, "queue"),
    "apikey": ("api_key", _text, MODES, "apiKey"),
    "dedup": ("dedup", _bool, MODES, "dedup"),
    "timeout": ("timeout", _float(0, 600), MODES, "timeout"),
    "retrytimeout": ("retry_timeout", _float(0, 86400), MODES, "retryTimeout"),
    "batchsize": ("batch_size", _int(1, 10_000), ("write",), "batchSize"),
    "limit": ("limit", _int(1, 5000), ("read",), "limit"),
    "spooldir": ("spool_dir", _text, ("stream",), "spoolDir"),
    "claimttl": ("claim_ttl", _int(1, 3600), ("stream",), "claimTtl"),
    "renewinterval": ("renew_interval", _float(0, 3600), ("stream",), "renewInterval"),
    "maxmessagespertrigger": ("max_per_batch", _int(1, 10_000_000), ("stream",), "maxMessagesPerTrigger"),
    "maxmessagesperbatch": ("max_per_batch", _int(1, 10_000_000), ("stream",), "maxMessagesPerBatch"),
    "maxbytespertrigger": ("max_bytes_per_batch", _int(1, 2**62), ("stream",), "maxBytesPerTrigger"),
    "pollsize": ("poll_size", _int(1, 1000), ("stream",), "pollSize"),
    "partitionsize": ("partition_size", _int(1, 10_000), ("stream",), "partitionSize"),
    "minpartitions": ("min_partitions", _int(1, 100_000), ("stream",), "minPartitions"),
}


def environment_defaults(environ: Mapping[str, str] | None = None, given: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``url`` from ``SPOOLQ_URL`` and ``api_key`` from ``SPOOLQ_API_KEY``, as the ``spoolq`` CLI
    reads them; an option given to the reader or writer wins. The variables are read where Spark
    plans the query: in the Python workers on the driver host, which inherit the environment the
    driver had when its SparkSession started."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {"url": DEFAULT_URL}
    raw_url = env.get("SPOOLQ_URL", "").strip()
    if raw_url and "url" not in given:
        try:
            values["url"] = _url("url", raw_url)
        except OptionError:
            raise OptionError(f"spoolq: SPOOLQ_URL must be an http(s) URL, got {raw_url!r} "
                              "(or give the 'url' option)") from None
    key = env.get("SPOOLQ_API_KEY", "")
    if key and "apikey" not in given:
        values["api_key"] = key
    return values


def parse(options: Mapping[str, str], mode: str, environ: Mapping[str, str] | None = None) -> Options:
    """Check ``options`` for ``mode`` and return them typed; :class:`OptionError` names the culprit.

    ``url`` and ``apiKey`` default to ``SPOOLQ_URL`` / ``SPOOLQ_API_KEY`` (:func:`environment_defaults`)."""
    values = environment_defaults(environ, frozenset(k.lower() for k in options))
    for key, raw in options.items():
        spec = _SPEC.get(key.lower())
        if spec is None:
            known = ", ".join(s[3] for s in _SPEC.values() if mode in s[2])
            raise OptionError(f"spoolq: unknown option {key!r} for {mode} (known: {known})")
        field, conv, modes, shown = spec
        if mode not in modes:
            raise OptionError(f"spoolq: option {shown!r} does not apply to {mode}")
        values[field] = conv(shown, str(raw))
    if "queue" not in values:
        raise OptionError("spoolq: option 'queue' is required")
    if mode == "stream":
        both = {"maxmessagespertrigger", "maxmessagesperbatch"} & {k.lower() for k in options}
        if len(both) > 1:
            raise OptionError("spoolq: give 'maxMessagesPerTrigger' or its older name 'maxMessagesPerBatch', not both")
        values.setdefault("renew_interval", max(1.0, values.get("claim_ttl", 300) / 3))
        if values["renew_interval"] >= values.get("claim_ttl", 300):
            raise OptionError("spoolq option 'renewInterval' must be shorter than 'claimTtl'")
    return Options(**values)


def check_common(options: Mapping[str, str]) -> None:
    """Checks that hold whatever the mode: every name known, every value valid, ``queue`` given."""
    for key, raw in options.items():
        spec = _SPEC.get(key.lower())
        if spec is None:
            raise OptionError(f"spoolq: unknown option {key!r} (known: {', '.join(s[3] for s in _SPEC.values())})")
        spec[1](spec[3], str(raw))
    if not any(k.lower() == "queue" for k in options):
        raise OptionError("spoolq: option 'queue' is required")
