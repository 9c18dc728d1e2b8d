"""Files and directories the file system refuses to serve (EIO; ENOTCONN for one name of a mount that
still serves its directory), remembered so that the operator is told which one, and what to run.

**Where it comes from.** On GlusterFS, a name created on two bricks of a replica while they could not
see each other gets two identities (a *gfid split-brain*): from then on every lookup of it, through
every mount, answers EIO until an operator resolves it. A replica-2 volume without client quorum
(GlusterFS's default for replica 2) allows exactly that: with one brick down, clients write to the
other alone, so a name made on brick 1 just before it failed and made again on brick 2 while it was
down is split. spoolq makes every lock file once, with its queue or its root
(:mod:`~spoolq.store.root_format`), but bucket directories are made by whichever node sends first in
that second, so only quorum (replica 3, or an arbiter) keeps them whole; ``docs/scale-out.md`` says
so. Resolving a split directory keeps one side's entries, so the volume's configuration, not the
resolution, is what keeps messages.

**What spoolq does with such a name.** It never lets one stop a queue where it can go round it: a
bucket lock that cannot be read is passed over (renames go ahead unlocked, and maintenance removes
no bucket without it: :mod:`~spoolq.store.bucket_guard`), the poll lane lock is optional
(:mod:`~spoolq.store.cursor`), a ready bucket that cannot be listed is passed over by pollers
(:func:`listing`). Every such name is recorded here (:func:`report`), per process, and listed by
``/readyz`` and the console (:func:`recent`, until a lookup of it no longer fails) with the
commands that resolve it on GlusterFS (the volume and the path inside it come from the mount table). Operations that cannot go round it (a
FIFO queue's lock, a dedup queue's marker lock, a queue's settings lock) answer 503 naming the file.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from dataclasses import dataclass

from spoolq.store.fileops import listdir
from spoolq.store.filesystems import mount_of

#: how long a reported name stays listed after it was last seen refused (seconds)
KEEP_FOR = 600.0


@dataclass(frozen=True)
class Damaged:
    """A name the file system refused with EIO, and what resolves it."""

    path: str
    what: str  # what spoolq was doing with it
    first_seen: float
    last_seen: float
    fix: str

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "what": self.what, "first_seen": round(self.first_seen, 3),
                "last_seen": round(self.last_seen, 3), "fix": self.fix}


_lock = threading.Lock()
_seen: dict[str, Damaged] = {}


def report(path: str, what: str) -> None:
    """Record that the file system answered EIO for ``path`` while spoolq was doing ``what``."""
    now = time.time()
    with _lock:
        earlier = _seen.get(path)
        first = earlier.first_seen if earlier is not None else now
        fix = earlier.fix if earlier is not None else fix_for(path)
        _seen[path] = Damaged(path, what, first, now, fix)


def recent(now: float | None = None) -> list[Damaged]:
    """The names refused within the last :data:`KEEP_FOR` seconds that the file system still
    refuses (each is looked up again: one the operator resolved, or that is gone, is dropped), the
    most recent first."""
    cutoff = (time.time() if now is None else now) - KEEP_FOR
    with _lock:
        listed = list(_seen.items())
    healed = [p for p, d in listed if d.last_seen < cutoff or not _still_refused(p)]
    with _lock:
        for path in healed:
            _seen.pop(path, None)
        return sorted(_seen.values(), key=lambda d: d.last_seen, reverse=True)


def _still_refused(path: str) -> bool:
    try:
        os.lstat(path)
    except OSError as e:
        return is_damage(e)
    return False


def is_damage(e: OSError) -> bool:
    """Whether ``e`` is the file system refusing a name, not a full, read-only or gone one: EIO, or
    ENOTCONN for a name whose directory the same mount still serves (GlusterFS answers ENOTCONN for a
    file none of whose reachable copies is good, as when an arbiter alone holds its latest state; a
    mount that lost every server answers ENOTCONN for the directory too, and that is the storage
    being unavailable, not one damaged name)."""
    if e.errno == errno.EIO:
        return True
    if e.errno != errno.ENOTCONN or not isinstance(e.filename, str) or not e.filename:
        return False
    try:
        os.stat(os.path.dirname(e.filename) or ".")
    except OSError:
        return False
    return True


def listing(path: str, what: str) -> list[str]:
    """The names in directory ``path``, as :func:`~spoolq.store.fileops.listdir` (a missing
    directory is empty), except that a directory the file system refuses (EIO) is reported and
    read as empty: the caller goes on with the others."""
    try:
        return listdir(path)
    except OSError as e:
        if not is_damage(e):
            raise
        report(path, what)
        return []


def fix_for(path: str, mountinfo: str = "/proc/self/mountinfo") -> str:
    """What the operator runs for ``path``: on a GlusterFS mount, the heal commands with the volume
    and the path inside it; elsewhere, a check of the file system."""
    mount = _gluster_mount(path, mountinfo)
    if mount is None:
        return "the file system answers EIO for this file: check the disk and the file system (dmesg, fsck)"
    volume, inside = mount
    return (f"`gluster volume heal {volume} info` lists it while a copy of it waits for a heal (it heals "
            "when every brick is back); "
            f"`gluster volume heal {volume} info split-brain` lists it if it is in split-brain; "
            f"`gluster volume heal {volume} split-brain latest-mtime {inside}` keeps its newest copy "
            "(use replica 3 or an arbiter so that no name can split)")


def _gluster_mount(path: str, mountinfo: str) -> tuple[str, str] | None:
    """(volume, path inside the volume) if ``path`` is on a GlusterFS FUSE mount."""
    # its directory resolved, not the name itself: a name in split-brain answers EIO
    real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    mount = mount_of(real, mountinfo, resolved=True)
    if mount is None or mount.type != "fuse.glusterfs":
        return None
    volume = mount.source.rsplit(":", 1)[-1].strip("/")
    inside = "/" + os.path.relpath(real, mount.point) if real != mount.point else "/"
    return volume, inside


def _forget_in_child() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
