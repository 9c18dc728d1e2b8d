"""Which flush reaches stable storage where the root lives (invariant 11).

``syncfs(2)`` (the ``syncfs`` flush, and the ``journal`` flush's checkpoints) asks the kernel to
write back one local file system and flush its disk. On a network or FUSE file system the kernel
only holds a client: ``syncfs`` may return before anything reached the servers (a FUSE daemon is
never asked to flush; an NFS or CIFS client writes back but commits nothing), while ``fsync(2)`` of
each file and directory is passed on to the server by every one of them. So:

* the root on a local disk: the default is the mode measured fastest on that file system
  (:data:`MEASURED_DEFAULTS`: ext4 with its journal and XFS, by ``bench/flush_bench.py``, whose table
  is in docs/performance.md), and ``syncfs`` on every other one (btrfs, tmpfs, ext4 made without a
  journal, ...), where no mode was measured ahead of it;
* the root on FUSE (GlusterFS, sshfs, any ``fuse.*``), NFS, CIFS/SMB, CephFS, 9p, AFS, Lustre,
  GFS2, OCFS2 and other network or cluster file systems: the default is ``fsync``, and
  ``syncfs`` or ``journal`` are refused with the reason unless the caller insists (``force``).

The file system is found in the mount table (``/proc/self/mountinfo``: the longest mount point
that holds the root, or its nearest existing parent) and, where that cannot be read, by
``statfs(2)``'s ``f_type``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from spoolq.errors import InvalidArgument

FLUSH_MODES = ("syncfs", "journal", "fsync")
#: the default on a local file system with no measured default
LOCAL_DEFAULT = "syncfs"
#: the default of each local file system where the three modes were measured side by side
#: (``bench/flush_bench.py``: 8 processes sending one at a time, 8 x 8 threads, batches of 10 and HTTP,
#: idle and beside a busy writer), and why; ext4 only with its journal (``data=`` among its options)
MEASURED_DEFAULTS: dict[str, tuple[str, str]] = {
    "ext4": ("journal", "measured fastest on ext4 for single and HTTP sends, idle and beside a busy writer, "
                        "where syncfs also writes whatever else is dirty (docs/performance.md)"),
    "xfs": ("syncfs", "measured fastest on XFS for single and HTTP sends, idle and beside a busy writer; "
                       "journal leads batches (docs/performance.md)"),
}

#: mount-table type names (before any ``.subtype``) of file systems whose syncfs may not reach stable storage
NETWORK_TYPES = frozenset({
    "fuse", "fuseblk", "glusterfs", "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "9p", "afs",
    "lustre", "gfs2", "ocfs2", "orangefs", "pvfs2", "beegfs", "gpfs", "davfs", "coda", "ncpfs",
    "vboxsf", "virtiofs",
})
#: statfs f_type magic numbers of the same (for when the mount table cannot be read)
NETWORK_MAGICS = {
    0x65735546: "fuse", 0x6969: "nfs", 0xFF534D42: "cifs", 0xFE534D42: "smb3", 0x517B: "smbfs",
    0x00C36400: "ceph", 0x01021997: "9p", 0x5346414F: "afs", 0x6B414653: "afs", 0x0BD00BD0: "lustre",
    0x01161970: "gfs2", 0x7461636F: "ocfs2", 0x20030528: "orangefs", 0x73757245: "coda",
}


class UnsafeFlush(InvalidArgument):
    """A flush that may not reach stable storage on the root's file system, asked for without force."""


@dataclass(frozen=True)
class FlushChoice:
    mode: str  # syncfs, journal or fsync
    fs_type: str  # as the mount table names it (``fuse.glusterfs``, ``nfs4``, ``ext4``), or ``unknown``
    network: bool  # syncfs may not reach stable storage there
    chosen: bool  # True: the default for this file system; False: asked for
    why: str = ""  # why this default (a local file system's; empty when asked for)

    def describe(self) -> str:
        how = "chosen for" if self.chosen else "as asked, on"
        return (f"flush={self.mode} ({how} {self.fs_type}{', a network/FUSE file system' if self.network else ''}"
                f"{': ' + self.why if self.why else ''})")


def _existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _mount_type(path: Path, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The type of the mount that holds ``path`` (``fuse.glusterfs``, ``ext4``...), from the mount table."""
    mount = mount_of(path, mountinfo)
    return mount.type if mount is not None else None


class Mount(NamedTuple):
    """One line of the mount table: where it is mounted, its device number, type and source."""

    point: str
    device: str  # major:minor
    type: str  # fuse.glusterfs, ext4...
    source: str  # the GlusterFS server:/volume, the block device...


def mount_of(path: Path | str, mountinfo: str = "/proc/self/mountinfo", *, resolved: bool = False) -> Mount | None:
    """The mount that holds ``path`` (``resolved``: already a real path, not resolved again)."""
    real = str(path) if resolved else os.path.realpath(path)
    best: Mount | None = None
    try:
        with open(mountinfo) as f:
            lines = f.readlines()
    except OSError:
        return None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if not sep or len(fields) < 5 or len(rest) < 2:
            continue
        mount_point = fields[4].encode().decode("unicode_escape")
        inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
        if inside and (best is None or len(mount_point) >= len(best.point)):
            best = Mount(mount_point, fields[2], rest[0], rest[1])
    return best


def ext4_without_journal(root: Path | str, mountinfo: str = "/proc/self/mountinfo",
                         proc_ext4: str = "/proc/fs/ext4", sys_block: str = "/sys/dev/block") -> str | None:
    """The device of the ext4 file system holding ``root`` when it has no journal, else None
    (another file system, a journal, or nothing to tell from).

    ext4 made without a journal (``mkfs.ext4 -O ^has_journal``) gives a rename no atomicity across
    a power cut until ``fsck`` has run, and it skips every inode freed in the last minutes when it
    makes a file, so after many deletes (acknowledged messages) each new message file costs
    hundreds of microseconds of CPU. A journaled ext4 lists ``data=`` among its options."""
    mount = mount_of(_existing(Path(root)), mountinfo)
    if mount is None or mount.type != "ext4":
        return None
    try:
        name = os.path.basename(os.readlink(f"{sys_block}/{mount.device}"))
        with open(f"{proc_ext4}/{name}/options") as f:
            options = f.read().split()
    except OSError:
        return None
    return None if any(o.startswith("data=") for o in options) else mount.source


def _statfs_magic(path: Path) -> int | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        buf = ctypes.create_string_buffer(256)  # struct statfs; f_type is its first field (a long)
        if libc.statfs(os.fsencode(path), buf) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return ctypes.c_ulong.from_buffer(buf).value & 0xFFFFFFFF


def file_system_of(root: Path | str) -> tuple[str, bool]:
    """(type name, whether syncfs may not reach stable storage there) of the file system holding ``root``."""
    where = _existing(Path(root))
    name = _mount_type(where)
    if name is not None:
        return name, name.split(".")[0] in NETWORK_TYPES
    magic = _statfs_magic(where)
    if magic is not None and magic in NETWORK_MAGICS:
        return NETWORK_MAGICS[magic], True
    return (f"0x{magic:x}" if magic is not None else "unknown"), False


def load_syncfs() -> Any:
    """The C library's ``syncfs(2)`` (takes a descriptor, returns 0 or -1 with ``errno`` set), or
    None where it has none."""
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_SYNCFS = load_syncfs()


def sync_local_file_system(path: Path | str) -> bool:
    """Write back the local file system holding ``path`` and flush its disk (``syncfs(2)``): True once
    done. False, and nothing done, where that may not reach stable storage (a network or FUSE file
    system, see the module doc) or the C library has no ``syncfs``: the caller fsyncs each file and
    directory instead. A copy of many files (``spoolq backup``, ``restore``) makes them durable at
    the cost of one flush instead of a journal commit per file."""
    if _SYNCFS is None or file_system_of(path)[1]:
        return False
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _SYNCFS(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)
    return True


def local_default(root: Path | str, fs_type: str) -> tuple[str, str]:
    """(mode, why) of the default flush on the local file system ``fs_type`` holding ``root``."""
    measured = MEASURED_DEFAULTS.get(fs_type)
    if measured is None:
        return LOCAL_DEFAULT, "no other mode measured faster on this file system; --flush overrides"
    if fs_type == "ext4" and ext4_without_journal(root) is not None:
        return LOCAL_DEFAULT, "ext4 made without a journal, where the modes were not measured; --flush overrides"
    return measured[0], f"{measured[1]}; --flush overrides"


def choose_flush(root: Path | str, requested: str | None = None, force: bool = False) -> FlushChoice:
    """The flush for a store at ``root``: ``requested`` if given (refused with :class:`UnsafeFlush`
    when it may not reach stable storage there, unless ``force``), else this file system's default."""
    if requested is not None and requested not in FLUSH_MODES:
        raise InvalidArgument(f"flush must be 'journal', 'syncfs' or 'fsync', got {requested!r}")
    fs_type, network = file_system_of(root)
    if requested is None:
        if network:
            return FlushChoice("fsync", fs_type, network, chosen=True)
        mode, why = local_default(root, fs_type)
        return FlushChoice(mode, fs_type, network, chosen=True, why=why)
    if network and requested != "fsync" and not force:
        raise UnsafeFlush(
            f"--flush {requested} refused: the root {root} is on {fs_type}, a network or FUSE file system, "
            f"where syncfs may return before the data reached the servers (an acknowledged send could be "
            f"lost in a power failure). Use --flush fsync (the default there), or --force-flush to insist.")
    return FlushChoice(requested, fs_type, network, chosen=False)


#: below this share of the file system's inodes left, the headroom is reported as short (one message
#: is one inode: ext4 fixes its inodes at mkfs, one per 16 KiB by default, whatever the files' size)
INODES_SHORT = 0.05


@dataclass(frozen=True)
class Headroom:
    """What the root's file system can still take: bytes, and files (one message is one file)."""

    free_bytes: int
    free_inodes: int | None  # None: the file system reports no inode limit (btrfs makes them as it goes)
    inodes: int | None

    @property
    def inodes_short(self) -> bool:
        return self.inodes is not None and self.free_inodes is not None and \
            self.free_inodes < INODES_SHORT * self.inodes

    def describe(self) -> str:
        files = ("no fixed inode limit" if self.inodes is None or self.free_inodes is None
                 else f"{self.free_inodes} free inodes of {self.inodes} (one per message)")
        size = (f"{self.free_bytes / 2**30:.1f} GiB" if self.free_bytes >= 2**30
                else f"{self.free_bytes / 2**20:.1f} MiB")
        return f"{size} free, {files}"


def inode_counts(st: os.statvfs_result) -> tuple[int | None, int | None]:
    """(free inodes an unprivileged writer may use, inodes) from ``statvfs``, or ``(None, None)`` where
    the file system has no fixed inode count: btrfs reports 0 inodes, and CephFS (``ceph-fuse``)
    reports the files it holds with -1 free."""
    if st.f_files <= 0 or not 0 <= st.f_favail <= st.f_files:
        return None, None
    return st.f_favail, st.f_files


def headroom(path: Path | str) -> Headroom:
    """The free bytes and free inodes (as an unprivileged writer may use them) of ``path``'s file system."""
    st = os.statvfs(path)
    return Headroom(st.f_bavail * st.f_frsize, *inode_counts(st))


#: mount types on which empty buckets are removed only under a guard (see
#: :mod:`spoolq.store.bucket_guard`), and why
GUARDED_BUCKET_REMOVAL: dict[str, str] = {
    "fuse.glusterfs": "an rmdir meeting a rename into the same directory can hang both",
    "glusterfs": "an rmdir meeting a rename into the same directory can hang both",
}
EMPTY_BUCKET_REMOVALS = ("immediate", "guarded")

#: mount types whose client waits for good on its next lookup of a name after losing a race of two
#: renames of one file to that name (ceph-fuse 16.2: it keeps the name marked as being renamed; see
#: docs/scale-out.md). There a claimed message goes back to its ready name in two renames
#: (:meth:`~spoolq.store.handle.QueueHandle.requeue`), so that no two nodes race to one name.
SAME_NAME_RENAME_RACE_HANGS = frozenset({"fuse.ceph-fuse"})


def requeue_in_two_steps(root: Path | str) -> bool:
    """Whether claimed messages go back to their ready names in two renames on ``root``'s file system."""
    return file_system_of(root)[0] in SAME_NAME_RENAME_RACE_HANGS


def empty_bucket_removal(root: Path | str) -> tuple[str, str]:
    """(``immediate`` or ``guarded``, why) for the file system holding ``root``: how empty standard
    buckets are removed (:mod:`spoolq.store.bucket_guard`)."""
    fs_type = file_system_of(root)[0]
    why = GUARDED_BUCKET_REMOVAL.get(fs_type)
    if why is not None:
        return "guarded", f"{fs_type}: {why}; maintenance removes empty buckets under the queue's bucket lock"
    return "immediate", f"{fs_type} orders an rmdir and a rename into the same directory: pollers remove empty buckets"
