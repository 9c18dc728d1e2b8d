"""Deleting a queue: at once, or only if it is empty without losing a message sent at that moment.

``delete_queue(name)`` renames the queue directory into ``trash/`` (the trash sweep unlinks it).

``delete_queue(name, if_empty=True)`` is what removes a queue that looks unused (a misspelled
EmoDB or Disque queue that a send created, the console's "delete empty queues"). Checking that
the queue is empty and then deleting it would lose a message sent between the two steps, so the
queue directory is first moved aside in one rename and only then looked into::

    queues/<q>  ->  queues/.del~<token>~<q>      the queue is gone for every caller
    any message file (a send landed before the rename):
    queues/.del~<token>~<q>  ->  queues/<q>                put back; QueueNotEmpty
    ... unless a send re-created queues/<q> meanwhile: every message file is renamed into the
    new queue's directory at the same place (claims keep their names, so receipts still work),
    then the rest goes to trash/ (dedup markers and nack counts stay behind: a later identical
    send may not collapse into a merged copy, a duplicate rather than a loss)
    no message file under ready/ claimed/ delayed/ acked/:
    queues/.del~<token>~<q>  ->  queues/.gone~<ms>~<token>~<q>     deleted, kept a while
    a minute later (maintenance, :func:`sweep_deleting`), looked into once more:
    queues/.gone~...  ->  trash/<q>~<token>      (the trash sweep unlinks it)
    or, if a message file is there now, put back (or merged) as above

Why the minute: a rename or link resolves its destination's path first and adds the name to
the last directory a moment later, and a rename of an ancestor (the queue directory moved aside)
may fall in between. So a send whose path was resolved before the queue moved aside can still
name its file in it after it was looked into. The directory is therefore kept, renamed but
whole, until such stragglers are surely done, and looked into again before it goes.

Whoever fails a rename into the queue while it is aside (a send, a release) sees the queue
missing: a send that may create its queue (EmoDB, Disque) creates it again and writes there; any
other send waits while the queue is being looked into
(:meth:`~spoolq.store.catalog.QueueCatalog.wait_for_comeback`: a ``.del~`` directory of that queue
exists) and tries once more, so a concurrent delete-if-empty never
refuses a send of a queue that stays. Polls see an empty queue for that instant; an ack or
release there finds nothing to act on (the claim then expires and its message is delivered
again: a duplicate, never a loss), which needs a message sent and claimed after the emptiness
check, within the same instant.

Every deletion that happened leaves a record, ``deleted/<q>`` (the time, written after the
rename: :meth:`~spoolq.store.catalog.QueueCatalog.note_deleted`), so that a create in any process or
node can refuse a name deleted moments ago (the contract's ``deleted_at``: SQS's
``QueueDeletedRecently``). The records are a few bytes per deleted name and are replaced, never
accumulated per deletion.

Crash rules: a ``.del~`` directory left by a process that died half-way is finished by
maintenance once it is older than a minute, like a ``.gone~`` one: put back (or merged) if it
holds a message, moved to trash otherwise. ``list_queues`` never lists names starting with ``.``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable

from spoolq.errors import QueueNotEmpty, QueueNotFound, storage_error
from spoolq.store import bucket_guard
from spoolq.store import layout as L
from spoolq.store.catalog import DELETING_PREFIX as PREFIX
from spoolq.store.catalog import QueueCatalog
from spoolq.store.fileops import GONE, listdir, rename_into

#: deleted queues wait here (``.gone~<ms>~<token>~<queue dir>``) for stragglers before the trash
GONE_PREFIX = ".gone~"
#: the state directories whose files are messages (``acked/``: archived, not yet compacted)
MESSAGE_DIRS = ("ready", "claimed", "delayed", "acked")
#: a ``.del~`` directory older than this (seconds) belongs to a process that died half-way; a
#: ``.gone~`` one is looked into again (and trashed if still empty) after this long
ORPHAN_AGE = 60.0


def holds_messages(path: str) -> bool:
    """Whether any file (a message, or a hidden one being made) is under the state directories."""
    for sub in MESSAGE_DIRS:
        for _dirpath, _dirnames, filenames in os.walk(f"{path}/{sub}"):
            if filenames:
                return True
    return False


def delete_queue(catalog: QueueCatalog, name: str, *, holds_messages: Callable[[str], bool] | None = None) -> None:
    """Delete queue ``name``: at once (its directory to the trash), or, given ``holds_messages``
    (whether the queue holds a message now), only if it holds none; else raise
    :class:`QueueNotEmpty` with the queue as it was (see the module docstring)."""
    q = catalog.require(name)
    if holds_messages is None:
        try:
            os.rename(q.path, f"{catalog.root}/trash/{L.queue_dir_name(name)}~{L.new_token()}")
        except FileNotFoundError:
            raise QueueNotFound(name) from None
        except OSError as e:
            raise storage_error(e, f"deleting queue {name!r}") from e
        catalog.forget(name)
        catalog.note_deleted(name)
        return
    if holds_messages(name):
        raise QueueNotEmpty(name)
    dirname = L.queue_dir_name(name)
    aside = f"{catalog.queues_dir}/{PREFIX}{L.new_token()}~{dirname}"
    try:
        os.rename(q.path, aside)
    except FileNotFoundError:
        raise QueueNotFound(name) from None
    except OSError as e:
        raise storage_error(e, f"deleting queue {name!r}") from e
    catalog.forget(name)
    try:
        if settle(catalog, aside):
            raise QueueNotEmpty(name)
    except OSError as e:
        raise storage_error(e, f"deleting queue {name!r}") from e
    catalog.note_deleted(name)


def queue_dir_of(aside: str) -> str:
    """The queue directory name of ``.del~<token>~<dir>`` or ``.gone~<ms>~<token>~<dir>``."""
    base = os.path.basename(aside)
    return base.split("~", 3 if base.startswith(GONE_PREFIX) else 2)[-1]


def settle(catalog: QueueCatalog, aside: str, *, final: bool = False) -> bool:
    """Decide a deletion: put the queue back (True) if it holds a message; else (False) it is
    deleted: kept as ``.gone~`` for stragglers, or with ``final`` (a ``.gone~`` whose time is
    up) moved to trash."""
    dirname = queue_dir_of(aside)
    if not holds_messages(aside):
        if final:
            os.rename(aside, f"{catalog.root}/trash/{dirname}~{L.new_token()}")
        else:
            os.rename(aside, f"{catalog.queues_dir}/{GONE_PREFIX}{int(time.time() * 1000)}~{L.new_token()}~{dirname}")
        return False
    home = f"{catalog.queues_dir}/{dirname}"
    try:
        os.rename(aside, home)
        return True
    except OSError as e:
        if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
    _merge(aside, home, guarded=catalog.guarded_buckets)  # a send made the queue again meanwhile: its messages join ours
    os.rename(aside, f"{catalog.root}/trash/{dirname}~{L.new_token()}")
    return True


def _merge(aside: str, home: str, *, guarded: bool) -> None:
    """Rename every message file of ``aside`` into ``home`` at the same place. Those are the buckets
    of the deleted queue's send (or due) seconds, old ones in the remade queue: where empty buckets
    are removed under the queue's bucket lock (GlusterFS), the renames hold it shared, as every
    rename into an old bucket does (bucket_guard.py). FileNotFoundError if ``home`` went meanwhile
    (the deletion is settled again later)."""
    with bucket_guard.renaming(os.path.realpath(home)) if guarded else contextlib.nullcontext():
        for sub in MESSAGE_DIRS:
            for dirpath, _dirnames, filenames in os.walk(f"{aside}/{sub}"):
                rel = os.path.relpath(dirpath, aside)
                for n in filenames:
                    with contextlib.suppress(FileNotFoundError):
                        rename_into(f"{dirpath}/{n}", f"{home}/{rel}", n, base=home)


def sweep_deleting(catalog: QueueCatalog, now: float) -> int:
    """Finish deletions: trash the ``.gone~`` directories whose minute is up (or put them back if
    a straggler's message is in them), and settle the ``.del~`` ones of processes that died
    half-way (see the crash rules). Returns how many it finished."""
    done = 0
    for n in listdir(catalog.queues_dir):
        path = f"{catalog.queues_dir}/{n}"
        try:
            if n.startswith(GONE_PREFIX):
                stamp = n[len(GONE_PREFIX):].split("~", 1)[0]
                if stamp.isdigit() and now - int(stamp) / 1000 > ORPHAN_AGE:
                    settle(catalog, path, final=True)
                    done += 1
            elif n.startswith(PREFIX) and now - os.stat(path).st_ctime > ORPHAN_AGE:
                settle(catalog, path)
                done += 1
        except OSError as e:
            if e.errno not in GONE:
                raise
    return done
