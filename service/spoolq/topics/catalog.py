"""SNS topics and their subscriptions, kept in the shared data root so that every node sees them.

Layout (a top-level directory of the root that nodes older than topics never look at)::

    <root>/topics/
      <account>/<region>/<dir>/        one topic; <dir> is its name, or, for a name over 200
                                       characters, its first 150 and ``~`` and 32 hex digits of its
                                       SHA-256 (a directory name may not pass 255 bytes)
        topic.json                     the topic: name, attributes, tags, creation time
        subs/<subscription id>.json    one subscription: protocol, endpoint, attributes, state
        fifo.seq                       a FIFO topic's last sequence number (rewritten in place)
        dedup/<sha256 of the id>       a FIFO topic's deduplication window: "<message id> <ms>"
      <account>/<region>/.locks/<dir>.lock   record lock: one change of the topic or its subscriptions
                                       at a time, across threads, processes and nodes
      <account>/<region>/.locks/<dir>.fifo   record lock: a FIFO topic's publishes, one at a time
                                       (lock files stay, outside the directory a deletion renames)
      .trash/<dir>~<ns>                a deleted topic's directory, removed whole after its rename
      signing/<key id>.pem             the key pair and certificate notifications are signed with
                                       (:mod:`spoolq.http.sns.signing`)

Every record is a small JSON file written whole in ``<root>/tmp`` (fsync'd), renamed over its
name, and its directory fsync'd before the call returns (:func:`~spoolq.store.fileops.write_json_atomic`):
a reader sees the old record or the new one, never a part. Records are read as replaced records
(:func:`~spoolq.store.fileops.read_json`: after a GlusterFS ESTALE the name is looked up again,
and after ENOENT too while the directory lists the name, as a mount answers while another one
renames a new version over it).

Crash rules:

* A crash before a record's rename leaves the old record (or none) and a temp file in ``tmp/``
  that the store's temp sweep removes; after the rename and before the directory's fsync, a
  power cut may keep the old record: the call was not answered, the client tries again.
* A topic is created by ``mkdir`` of its directory, then ``topic.json``: a directory without
  ``topic.json`` is no topic (listings skip it, the next CreateTopic of the name fills it).
* A topic is deleted by renaming its directory into ``.trash/`` (one rename: its subscriptions
  go with it), then removing that; a crash leaves a directory in ``.trash/`` that the next
  deletion or listing removes.
* Changes of a topic and its subscriptions hold the topic's ``.lock`` (:mod:`spoolq.store.recordlock`:
  what NFS and GlusterFS enforce between nodes), so two CreateTopic or Subscribe calls with
  different attributes never both succeed, and a change reads the record it replaces.
* A FIFO topic's sequence numbers and deduplication window have crash rules of their own
  (:mod:`spoolq.topics.fifo`).

Reading is cached per process: a topic's record and subscriptions are read again only when its
directory or ``subs/`` changed (their modification times), and always while a change is younger
than :data:`RACY_SECONDS` (a change within one tick of the file system's clock leaves the time
as it was). A change through another node is seen at its next modification time, so at once on
a local disk and CephFS, and within the attribute cache's time (1 s by default) on GlusterFS.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spoolq.errors import SpoolqError, storage_error
from spoolq.store import recordlock
from spoolq.store.fileops import (
    TempWriter,
    fsync_dir,
    listdir,
    make_dirs_durable,
    read_file,
    read_json,
    read_json_listed,
    write_json_atomic,
)
from spoolq.topics.fifo import FifoWindow

#: a change younger than this is not trusted to have moved its directory's modification time
RACY_SECONDS = 2.0
_LONG_NAME = 200
TOPICS_DIR = "topics"


class TopicNotFound(SpoolqError):
    """The topic (or the subscription's topic) does not exist."""


class SubscriptionNotFound(SpoolqError):
    """The subscription does not exist."""


class AlreadyExists(SpoolqError):
    """A topic or subscription of the same name exists with other attributes or tags; the message
    says which (``attributes``, ``tags``)."""


@dataclass(frozen=True)
class TopicKey:
    """A topic's identity: account, region and name (its ARN ``arn:aws:sns:<region>:<account>:<name>``)."""

    account: str
    region: str
    name: str

    @property
    def arn(self) -> str:
        return f"arn:aws:sns:{self.region}:{self.account}:{self.name}"

    @property
    def store_name(self) -> str:
        """The name permissions use: ``sns:<account>:<region>:<name>`` (:mod:`spoolq.access.auth`)."""
        return f"sns:{self.account}:{self.region}:{self.name}"

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")


@dataclass(frozen=True)
class Topic:
    key: TopicKey
    attributes: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    created: float = 0.0


@dataclass(frozen=True)
class Subscription:
    topic: TopicKey
    id: str
    protocol: str
    endpoint: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    #: an SQS subscription is confirmed at once; an HTTP one once its endpoint confirmed it
    confirmed: bool = True
    #: the token a SubscriptionConfirmation carries (unconfirmed subscriptions)
    token: str = ""
    #: the account that subscribed
    owner: str = ""
    created: float = 0.0

    @property
    def arn(self) -> str:
        return f"{self.topic.arn}:{self.id}"


def subscription_id(topic: TopicKey, protocol: str, endpoint: str) -> str:
    """The id of the subscription of ``endpoint`` by ``protocol`` to ``topic``: the same for the
    same three, so a repeated Subscribe (from any node, at the same moment too) finds the first."""
    digits = hashlib.sha256(f"{topic.arn}\n{protocol}\n{endpoint}".encode()).hexdigest()
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{'89ab'[int(digits[16], 16) & 3]}{digits[17:20]}-{digits[20:32]}"


def _dir_name(name: str) -> str:
    if len(name) <= _LONG_NAME:
        return name
    return f"{name[:150]}~{hashlib.sha256(name.encode()).hexdigest()[:32]}"


def _topic_json(topic: Topic) -> dict[str, Any]:
    return {"name": topic.key.name, "attributes": dict(topic.attributes), "tags": dict(topic.tags),
            "created": topic.created}


def _sub_json(sub: Subscription) -> dict[str, Any]:
    return {"id": sub.id, "protocol": sub.protocol, "endpoint": sub.endpoint, "attributes": dict(sub.attributes),
            "confirmed": sub.confirmed, "token": sub.token, "owner": sub.owner, "created": sub.created}


def _sub_of(key: TopicKey, data: Mapping[str, Any]) -> Subscription | None:
    try:
        return Subscription(key, str(data["id"]), str(data["protocol"]), str(data["endpoint"]),
                            {str(k): str(v) for k, v in data.get("attributes", {}).items()},
                            bool(data.get("confirmed", True)), str(data.get("token", "")),
                            str(data.get("owner", "")), float(data.get("created", 0.0)))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


@dataclass(frozen=True)
class TopicState:
    """A topic as read at one moment: its record (``None``: no topic) and its subscriptions.
    ``derived``: what a reader works out from them once for every publish while this state is
    cached (the SNS door keeps each subscription's queue and compiled filter policy there)."""

    stamp: tuple[int, int]
    topic: Topic | None
    subscriptions: tuple[Subscription, ...]
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


class TopicRegistry:
    """The topics and subscriptions under ``<root>/topics/`` (see the module docstring)."""

    def __init__(self, root: Path | str, node_id: str = "node", clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self.base = self.root / TOPICS_DIR
        self._tmp = TempWriter(self.root / "tmp", node_id)
        self._clock = clock
        self._cache: dict[TopicKey, TopicState] = {}
        self._cache_lock = threading.Lock()
        self._publishes = 0

    # ------------------------------------------------------------ where

    def topic_dir(self, key: TopicKey) -> str:
        return f"{self.base}/{key.account}/{key.region}/{_dir_name(key.name)}"

    def _lock_file(self, key: TopicKey, lock: str) -> str:
        return f"{self.base}/{key.account}/{key.region}/.locks/{_dir_name(key.name)}.{lock}"

    @contextlib.contextmanager
    def _locked(self, key: TopicKey, lock: str = "lock", create: bool = False) -> Iterator[str]:
        """The topic's directory, with its record lock held; made first with ``create``, else
        :class:`TopicNotFound` when there is none. The lock files live beside the topics (in
        ``.locks/``), never inside a directory a deletion renames away."""
        directory = self.topic_dir(key)
        lock_file = self._lock_file(key, lock)
        held = contextlib.ExitStack()
        try:
            make_dirs_durable(f"{self.root}/tmp", str(self.root))  # where records are written first
            make_dirs_durable(os.path.dirname(lock_file), str(self.root))
            if create:
                make_dirs_durable(directory, str(self.root))
            held.enter_context(recordlock.exclusive(lock_file))
        except OSError as e:
            raise storage_error(e, f"locking topic {key.name!r}") from e
        with held:
            if not os.path.isdir(directory):
                if not create:
                    raise TopicNotFound(f"topic {key.name} does not exist")
                try:  # deleted between our mkdir and our lock
                    make_dirs_durable(directory, str(self.root))
                except OSError as e:
                    raise storage_error(e, f"creating topic {key.name!r}") from e
            yield directory

    def _write(self, path: str, value: Mapping[str, Any]) -> None:
        try:
            write_json_atomic(Path(path), value, self._tmp, durable=True)
        except OSError as e:
            raise storage_error(e, "writing a topic record") from e

    def _forget(self, key: TopicKey) -> None:
        with self._cache_lock:
            self._cache.pop(key, None)

    # ------------------------------------------------------------ topics

    def create_topic(self, key: TopicKey, attributes: Mapping[str, str], tags: Mapping[str, str]) -> Topic:
        """The topic ``key``, created with ``attributes`` and ``tags`` unless it exists; an existing
        one is returned if the attributes and tags given agree with its own (each given one has the
        topic's value; none given: nothing to agree), else :class:`AlreadyExists`."""
        with self._locked(key, create=True) as directory:
            existing = self._read_topic(key, directory)
            if existing is not None:
                if any(existing.attributes.get(k) != v for k, v in attributes.items()):
                    raise AlreadyExists("attributes")
                if any(existing.tags.get(k) != v for k, v in tags.items()):
                    raise AlreadyExists("tags")
                return existing
            topic = Topic(key, dict(attributes), dict(tags), self._clock())
            self._write(f"{directory}/topic.json", _topic_json(topic))
        self._forget(key)
        return topic

    def _read_topic(self, key: TopicKey, directory: str) -> Topic | None:
        data = read_json_listed(Path(f"{directory}/topic.json"))  # another node may be replacing it
        if data is None or data.get("name") != key.name:
            return None
        return Topic(key, {str(k): str(v) for k, v in dict(data.get("attributes", {})).items()},
                     {str(k): str(v) for k, v in dict(data.get("tags", {})).items()},
                     float(data.get("created", 0.0)))

    def get_topic(self, key: TopicKey) -> Topic | None:
        return self.read(key).topic

    def change_topic(self, key: TopicKey, change: Callable[[Topic], Topic]) -> Topic:
        """Replace the topic by ``change(topic as it is now)`` under its lock; :class:`TopicNotFound`."""
        with self._locked(key) as directory:
            topic = self._read_topic(key, directory)
            if topic is None:
                raise TopicNotFound(f"topic {key.name} does not exist")
            changed = change(topic)
            self._write(f"{directory}/topic.json", _topic_json(changed))
        self._forget(key)
        return changed

    def delete_topic(self, key: TopicKey) -> bool:
        """Delete the topic and its subscriptions; False if there was none."""
        trash = self.base / ".trash"
        try:
            with self._locked(key) as directory:
                trash.mkdir(parents=True, exist_ok=True)
                gone = f"{trash}/{_dir_name(key.name)}~{time.time_ns()}"
                os.rename(directory, gone)
                fsync_dir(os.path.dirname(directory))
        except TopicNotFound:
            return False
        except OSError as e:
            raise storage_error(e, f"deleting topic {key.name!r}") from e
        self._forget(key)
        self._empty_trash()
        return True

    def _empty_trash(self) -> None:
        trash = f"{self.base}/.trash"
        for name in listdir(trash):
            shutil.rmtree(f"{trash}/{name}", ignore_errors=True)

    def list_topics(self, account: str, region: str) -> list[Topic]:
        """Every topic of the account in the region, by name."""
        region_dir = f"{self.base}/{account}/{region}"
        topics = []
        for entry in listdir(region_dir):
            if entry.startswith("."):  # .locks
                continue
            name: Any = entry
            if "~" in entry:  # a long name cut short: the record has it whole
                data = read_json(Path(f"{region_dir}/{entry}/topic.json"), present=True)
                name = data.get("name") if data is not None else None
            if isinstance(name, str) and _dir_name(name) == entry:
                topic = self.read(TopicKey(account, region, name)).topic
                if topic is not None:
                    topics.append(topic)
        topics.sort(key=lambda t: t.key.name)
        return topics

    def regions(self, account: str) -> list[str]:
        return sorted(listdir(f"{self.base}/{account}"))

    # ------------------------------------------------------------ subscriptions

    def subscribe(self, key: TopicKey, protocol: str, endpoint: str, attributes: Mapping[str, str], *,
                  confirmed: bool, token: str, owner: str,
                  defaults: Mapping[str, str] | None = None) -> tuple[Subscription, bool]:
        """The subscription of ``endpoint`` to the topic (made now, or the one that exists if each
        attribute given has its value there, or its ``defaults`` value where it has none: else
        :class:`AlreadyExists`), and whether it was made now."""
        sub_id = subscription_id(key, protocol, endpoint)
        with self._locked(key) as directory:
            if self._read_topic(key, directory) is None:
                raise TopicNotFound(f"topic {key.name} does not exist")
            path = f"{directory}/subs/{sub_id}.json"
            data = read_json_listed(Path(path))
            existing = _sub_of(key, data) if data is not None else None
            if existing is not None:
                if any(existing.attributes.get(k, (defaults or {}).get(k)) != v for k, v in attributes.items()):
                    raise AlreadyExists("attributes")
                return existing, False
            sub = Subscription(key, sub_id, protocol, endpoint, dict(attributes), confirmed, token, owner,
                               self._clock())
            try:
                make_dirs_durable(f"{directory}/subs", directory)
            except OSError as e:
                raise storage_error(e, "making a topic's subscriptions directory") from e
            self._write(path, _sub_json(sub))
        self._forget(key)
        return sub, True

    def change_subscription(self, key: TopicKey, sub_id: str,
                            change: Callable[[Subscription], Subscription]) -> Subscription:
        """Replace the subscription by ``change(it as it is now)`` under its topic's lock."""
        try:
            with self._locked(key) as directory:
                path = f"{directory}/subs/{sub_id}.json"
                data = read_json_listed(Path(path))
                sub = _sub_of(key, data) if data is not None else None
                if sub is None:
                    raise SubscriptionNotFound("Subscription does not exist")
                changed = change(sub)
                self._write(path, _sub_json(changed))
        except TopicNotFound:
            raise SubscriptionNotFound("Subscription does not exist") from None
        self._forget(key)
        return changed

    def unsubscribe(self, key: TopicKey, sub_id: str) -> bool:
        """Remove the subscription; False if there was none (or no topic)."""
        try:
            with self._locked(key) as directory:
                path = f"{directory}/subs/{sub_id}.json"
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    return False
                fsync_dir(os.path.dirname(path))
        except TopicNotFound:
            return False
        except OSError as e:
            raise storage_error(e, "removing a subscription") from e
        self._forget(key)
        return True

    def get_subscription(self, key: TopicKey, sub_id: str) -> Subscription | None:
        for sub in self.read(key).subscriptions:
            if sub.id == sub_id:
                return sub
        return None

    def subscriptions(self, key: TopicKey) -> tuple[Subscription, ...]:
        return self.read(key).subscriptions

    def read(self, key: TopicKey) -> TopicState:
        """The topic and its subscriptions (by creation time), read again only when they changed."""
        directory = self.topic_dir(key)
        stamp = _stamp(directory)
        now = time.time()
        with self._cache_lock:
            cached = self._cache.get(key)
        if cached is not None and cached.stamp == stamp and stamp != (0, 0) \
                and max(stamp) < (now - RACY_SECONDS) * 1e9:
            return cached
        topic = self._read_topic(key, directory)
        subs: list[Subscription] = []
        if topic is not None:
            for entry in listdir(f"{directory}/subs"):
                if entry.endswith(".json"):
                    data = read_json(Path(f"{directory}/subs/{entry}"), present=True)
                    sub = _sub_of(key, data) if data is not None else None
                    if sub is not None:
                        subs.append(sub)
        subs.sort(key=lambda s: (s.created, s.id))
        fresh = TopicState(stamp, topic, tuple(subs))
        with self._cache_lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = fresh
        return fresh

    # ------------------------------------------------------------ the signing key

    def signing_keys(self) -> list[tuple[str, bytes]]:
        """Every ``signing/<key id>.pem`` as (key id, its bytes), smallest id first."""
        directory = f"{self.base}/signing"
        keys = []
        for name in sorted(listdir(directory)):
            if name.endswith(".pem") and len(name) == 36:
                try:
                    keys.append((name[:-4], read_file(f"{directory}/{name}")))
                except OSError:
                    continue
        return keys

    def add_signing_key(self, key_id: str, data: bytes) -> None:
        """Write ``signing/<key id>.pem`` whole (mode 0600) and durable; its name is its own."""
        directory = f"{self.base}/signing"
        try:
            make_dirs_durable(directory, str(self.root))
            os.makedirs(self.root / "tmp", exist_ok=True)
            t = self._tmp.write(data, fsync_file=True)
            os.chmod(t, 0o600)
            os.rename(t, f"{directory}/{key_id}.pem")
            fsync_dir(directory)
        except OSError as e:
            raise storage_error(e, "writing the SNS signing key") from e

    # ------------------------------------------------------------ FIFO topics

    @contextlib.contextmanager
    def fifo_publishing(self, key: TopicKey) -> Iterator[FifoWindow]:
        """Hold the FIFO topic's publish lock: publishes take their sequence numbers and reach
        their queues in one order."""
        with self._locked(key, "fifo") as directory:
            yield FifoWindow(directory, self._tmp, self._clock)


def _stamp(directory: str) -> tuple[int, int]:
    """The modification times (ns) of a topic's directory and its ``subs/`` ((0, 0): no topic)."""
    try:
        top = os.stat(directory).st_mtime_ns
    except OSError:
        return (0, 0)
    try:
        subs = os.stat(f"{directory}/subs").st_mtime_ns
    except OSError:
        subs = 0
    return (top, subs)


def changed_topic(topic: Topic, attributes: Mapping[str, str] | None = None,
                  tags: Mapping[str, str] | None = None) -> Topic:
    """``topic`` with ``attributes`` and ``tags`` in place of its own (``None``: kept)."""
    return replace(topic, attributes=dict(topic.attributes if attributes is None else attributes),
                   tags=dict(topic.tags if tags is None else tags))
