"""Replaying the commit journals of dead processes into the queues (``flush="journal"``).

A journaled send is durable once its journal record is; the message file itself may have been
torn or lost by a power failure. :func:`recover_journals` hands every journal of this node that
no live process owns to :func:`spoolq.store.journal.recover`, which calls
:func:`restore_journaled` for each record and then retires the journal: a message that is whole
anywhere in its queue (ready, claimed, delayed, acknowledged into the archive) is left alone, a
torn copy is rewritten in place, a missing one is put back at its ready name. Run at start-up
and by every maintenance pass.
"""

from __future__ import annotations

import os

from spoolq.errors import storage_error
from spoolq.store import layout as L
from spoolq.store.core import StoreCore
from spoolq.store.files import CorruptMessage, decode_message, listdir, read_file, rename_into
from spoolq.store.journal import recover


def recover_journals(core: StoreCore) -> tuple[int, int]:
    """Replay or retire this node's commit journals that no live process owns (see
    :mod:`spoolq.store.journal`): (files retired, messages restored)."""
    j = core.commit.journal
    if j is None:
        return 0, 0
    try:
        return recover(core.root, j.node, j.boot, core.commit.syncfs_now,
                       lambda rel, data: restore_journaled(core, rel, data))
    except OSError as e:
        raise storage_error(e, "recovering the commit journal") from e


def restore_journaled(core: StoreCore, rel: str, data: bytes) -> bool:
    """Put a journaled message back at ``queues/<rel>`` unless it is whole somewhere in its queue."""
    parts = rel.split("/")
    if len(parts) < 3 or ".." in parts or not L.ID_RE.match(parts[-1][:40]):
        return False
    qpath = f"{core.queues_dir}/{parts[0]}"
    if not os.path.exists(f"{qpath}/meta.json"):
        return False  # the queue was deleted since
    mid = parts[-1][:40]
    prefix = f"{mid}~"
    dirs = [os.path.dirname(f"{core.queues_dir}/{rel}"), f"{qpath}/claimed/{L.id_shard(mid)}", f"{qpath}/acked"]
    dirs += [f"{qpath}/delayed/{b}" for b in listdir(f"{qpath}/delayed")]
    for d in dirs:
        for n in listdir(d):
            if n.startswith(prefix):
                try:
                    decode_message(read_file(f"{d}/{n}"))
                    return False  # whole: nothing to do
                except CorruptMessage:
                    os.replace(core.tmp.write(data), f"{d}/{n}")  # torn by the power failure
                    return True
                except FileNotFoundError:
                    continue
    rename_into(core.tmp.write(data), os.path.dirname(f"{core.queues_dir}/{rel}"), parts[-1], base=qpath)
    return True
