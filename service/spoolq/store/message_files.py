"""Making a message file: written whole without a name, then named where it will live.

No message file passes through a directory that every process writes into: when all the senders
of a node create their files in one ``tmp/`` and rename them out of it, they all queue on that
one directory (its lock, and the file system's lock for cross-directory renames), and that, not
the flush, bounds how many sends a disk takes. So a message file is made in one of two ways,
chosen once per store by what its file system supports:

* **In place** (``O_TMPFILE``; ext4, xfs, btrfs, tmpfs): an inode with no name is opened in the
  directory the message goes to, the message written into it (and ``fsync``'d when each file is
  flushed on its own, ``--flush fsync``), then given its final name with ``linkat`` of
  ``/proc/self/fd/N`` with ``AT_SYMLINK_FOLLOW`` (no privilege needed, unlike ``AT_EMPTY_PATH``;
  ``N`` relative to a descriptor of ``/proc/self/fd`` each process opens once).
  No other name ever exists: a process killed before the link leaves nothing (the inode is freed
  with its last descriptor), a power cut leaves an orphan inode the file system frees when it
  mounts. The name appears only once the file is whole.
* **Per-process temp directory** (where ``O_TMPFILE`` is refused: FUSE file systems such as
  GlusterFS, NFS): written under ``tmp/<node>-<pid>/`` and renamed into place, as before, but
  only this process writes into or renames out of that directory. A crash leaves the directory
  with at most the files being written; maintenance removes the directories of this node's dead
  processes and any older than an hour (``maintenance.sweep_tmp``). A file ``fsync``'d before its
  name (``--flush fsync``, the default on shared file systems) keeps its descriptor open until it
  is renamed: on CephFS, a file closed and then renamed could not be renamed by another node
  (claimed) until the MDS's next tick, up to 5 seconds later; renamed while still open, it can
  at once. A file not yet flushed is closed first, so that a FUSE client has written back its
  data before another node can see its name.

Either way the crash rules are those of :mod:`spoolq.store.group_commit`: the name is given after the
data is written, and a send is acknowledged only after a flush that began after its file got its
name, so a file torn by a power cut (a name whose data never reached the disk) was never
acknowledged, and its checksum keeps it from being delivered. Directories on the way may vanish
under a writer at any time (see :func:`spoolq.store.fileops.rename_into`): naming a file re-creates
them below the queue directory and tries again.

A file is made in two steps, :meth:`MessageFiles.write` (the data, with no name in the queue) and
:meth:`MessageFiles.name` (its name), so a batch can write its files from several threads (their
``fsync``\\ s overlap) and still name them in order; :meth:`MessageFiles.make` takes both steps in
one call where files are made in place (each file of a batch written and named in turn).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from dataclasses import dataclass

from spoolq.store import process
from spoolq.store.fileops import GONE, _make_levels, rename_into

#: errnos with which a file system refuses O_TMPFILE (EISDIR: kernels from before O_TMPFILE, which
#: see O_DIRECTORY; EOPNOTSUPP/ENOSYS: no support in the file system or its FUSE server)
_NO_TMPFILE = (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOSYS)


class _ProcFds:
    """This process's ``/proc/self/fd`` as an open directory, for ``linkat(2)`` of an ``O_TMPFILE``
    descriptor by name relative to it with ``AT_SYMLINK_FOLLOW`` (``os.link`` with
    ``src_dir_fd``: Python calls ``linkat`` only when a directory descriptor or
    ``follow_symlinks=False`` is given, ``link(2)`` otherwise, which would link the ``/proc``
    symlink itself). Opened on first use in each process: a descriptor opened before a fork
    names the parent's table, so a forked child forgets it (``os.register_at_fork``) before any
    of its own code runs."""

    def __init__(self) -> None:
        #: the open directory, or -1 before this process's first use
        self.current = -1
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self.current = -1
        self._lock = threading.Lock()

    def fd(self) -> int:
        if self.current < 0:
            with self._lock:
                if self.current < 0:
                    self.current = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return self.current


_PROC_FDS = _ProcFds()


#: how an unnamed message file is opened in its directory
_TMPFILE_FLAGS = os.O_WRONLY | os.O_TMPFILE if hasattr(os, "O_TMPFILE") else 0

#: how many times a vanishing destination directory is re-created before giving up (see rename_into)
_ATTEMPTS = 1000
#: EPERMs from O_TMPFILE in one write after which the directory is taken to refuse for good
_REFUSALS = 5


@dataclass
class Unnamed:
    """A message file written whole but not yet named in its queue: an ``O_TMPFILE`` descriptor,
    or a file in this process's temp directory."""

    fd: int = -1
    temp: str = ""


class MessageFiles:
    """Makes message files for one store (see the module docstring).

    ``in_place=False`` uses the per-process temp directories even where ``O_TMPFILE`` works (for
    comparisons and tests of that path)."""

    def __init__(self, tmp_dir: str, node_prefix: str, in_place: bool = True) -> None:
        self._tmp_dir = tmp_dir
        self._node_prefix = node_prefix
        self._in_place = in_place and hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
        self._lock = threading.Lock()
        self._n = 0
        self._own_dir_pid = -1

    @property
    def in_place(self) -> bool:
        """Whether files are made in place (O_TMPFILE) rather than in a per-process temp directory."""
        return self._in_place

    def own_dir(self) -> str:
        """This process's temp directory (``tmp/<node>-<pid>``), made on first use after a fork."""
        pid = process.pid()
        path = f"{self._tmp_dir}/{self._node_prefix}{pid}"
        if self._own_dir_pid != pid:
            with contextlib.suppress(FileExistsError):
                os.mkdir(path)  # not makedirs: a vanished root is not made again (it is a 503)
            self._own_dir_pid = pid
        return path

    def write(self, data: bytes, directory: str, *, base: str, fsync_file: bool) -> Unnamed:
        """Write ``data`` into a file with no name yet, for ``directory`` (re-created below ``base``
        if it is missing). FileNotFoundError when ``base`` is gone (the queue was deleted)."""
        if self._in_place:
            fd = self._open_unnamed(directory, base)
            if fd >= 0:
                try:
                    _write_all(fd, data)
                    if fsync_file:
                        os.fsync(fd)
                except BaseException:
                    os.close(fd)
                    raise
                return Unnamed(fd=fd)
        with self._lock:
            self._n += 1
            n = self._n
        path = f"{self.own_dir()}/{threading.get_ident():x}-{n}.tmp"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:  # maintenance swept our directory as if we were dead: make it again
            self._own_dir_pid = -1
            fd = os.open(f"{self.own_dir()}/{os.path.basename(path)}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _write_all(fd, data)
            if fsync_file:
                os.fsync(fd)
                return Unnamed(fd=fd, temp=path)  # closed once named (see the module docstring)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        os.close(fd)  # before the name: a FUSE client writes back what it holds when it closes
        return Unnamed(temp=path)

    def make(self, data: bytes, directory: str, name: str, *, base: str, fsync_file: bool) -> bool:
        """:meth:`write` and :meth:`name` in one step where files are made in place: ``data`` written
        into an ``O_TMPFILE`` in ``directory`` (re-created below ``base`` if it is missing) and
        linked as ``name``; its descriptor is closed whatever happens, so nothing is left to
        discard. False, with nothing done, where this store makes its files in its temp directory
        (then :meth:`write` and :meth:`name`). BaseGone when ``base`` is gone."""
        if not self._in_place:
            return False
        try:
            fd = os.open(directory, _TMPFILE_FLAGS, 0o644)
        except OSError as e:
            if e.errno in _NO_TMPFILE:  # refused here: from now on this store uses its temp directory
                self._in_place = False
                return False
            fd = self._open_unnamed(directory, base)  # the directory missing or removed: made again
            if fd < 0:
                return False
        try:
            written = os.write(fd, data)  # all of it, but for a signal or a full disk in between
            if written < len(data):
                _write_rest(fd, data, written)
            if fsync_file:
                os.fsync(fd)
            proc_fds = _PROC_FDS.current
            try:
                os.link(str(fd), f"{directory}/{name}", src_dir_fd=proc_fds if proc_fds >= 0 else _PROC_FDS.fd(),
                        follow_symlinks=True)
            except OSError as e:
                if e.errno not in GONE:
                    raise
                _make_levels(base, directory)  # removed since the file was opened
                self._link(fd, directory, name, base)
        finally:
            try:  # not contextlib.suppress: this runs for every message sent
                os.close(fd)
            except OSError:
                pass
        return True

    def _open_unnamed(self, directory: str, base: str) -> int:
        """An O_TMPFILE descriptor in ``directory``, or -1 if the file system refuses them (then
        this store makes its files in its temp directories from now on)."""
        refusals = 0
        for _attempt in range(_ATTEMPTS):
            try:
                return os.open(directory, _TMPFILE_FLAGS, 0o644)
            except OSError as e:
                if e.errno in _NO_TMPFILE:
                    self._in_place = False
                    return -1
                if e.errno == errno.EPERM:
                    # ext4 answers EPERM, not ENOENT, when the directory was removed between the
                    # lookup of its path and the making of the inode (a purge, an empty bucket
                    # removed): made again and tried again. A directory that refuses for good
                    # (chattr +i, a security module) refuses every time: its error stands.
                    refusals += 1
                    if refusals >= _REFUSALS:
                        raise
                elif e.errno not in GONE:
                    raise
            _make_levels(base, directory)
        raise OSError(errno.EAGAIN, f"{directory} was removed {_ATTEMPTS} times while writing into it")

    def name(self, unnamed: Unnamed, directory: str, name: str, *, base: str) -> None:
        """Give a written file its name ``directory/name``, re-creating missing directories below
        ``base``; the file's descriptor is closed. FileNotFoundError when ``base`` is gone."""
        if not unnamed.temp:
            try:
                self._link(unnamed.fd, directory, name, base)
            finally:
                self.discard(unnamed)
            return
        rename_into(unnamed.temp, directory, name, base=base)
        unnamed.temp = ""
        self.discard(unnamed)  # its descriptor, if still open

    @staticmethod
    def _link(fd: int, directory: str, name: str, base: str) -> None:
        source = str(fd)
        target = f"{directory}/{name}"
        for _attempt in range(_ATTEMPTS):
            try:
                os.link(source, target, src_dir_fd=_PROC_FDS.fd(), follow_symlinks=True)
                return
            except OSError as e:
                if e.errno not in GONE:
                    raise
            _make_levels(base, directory)  # removed since the file was opened: an inode links anywhere on its mount
        raise OSError(errno.EAGAIN, f"{directory} was removed {_ATTEMPTS} times while naming a file in it")

    @staticmethod
    def discard(unnamed: Unnamed) -> None:
        """Drop a file that will not be named (or close the descriptor of one that was)."""
        if unnamed.fd >= 0:
            try:  # not contextlib.suppress: this runs for every message sent
                os.close(unnamed.fd)
            except OSError:
                pass
            unnamed.fd = -1
        if unnamed.temp:
            with contextlib.suppress(OSError):
                os.unlink(unnamed.temp)
            unnamed.temp = ""


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)  # all of it, but for a signal or a full disk in between
    if written < len(data):
        _write_rest(fd, data, written)


def _write_rest(fd: int, data: bytes, written: int) -> None:
    """The rest of ``data`` after a short write of its first ``written`` bytes."""
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view):]
