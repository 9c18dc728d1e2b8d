"""File operations that hold while other processes and nodes remove directories under them.

Every rename into a queue goes through :func:`rename_into`, which re-creates the directory levels
somebody else removed; :func:`listdir` and :func:`read_file` take a name that vanished (ENOENT,
or ESTALE on a shared file system: :data:`GONE`) as a race lost, not an error. Besides: temp
files written whole under ``<root>/tmp`` (:class:`TempWriter`), JSON records replaced whole
(:func:`write_json_atomic`, :func:`read_json`), directory fsyncs, and files of written zeros
(:func:`write_zeros`, the commit journal's prepared files). How writes are made durable
is :mod:`spoolq.store.group_commit`'s business.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def read_file(path: str, *, replaced: bool = False, present: bool = False, message: bool = False) -> bytes:
    """The whole file. ESTALE at any step (GlusterFS may report it on open, read or even close
    when another mount replaced or removed the file; see ``GONE``) is FileNotFoundError: the
    file this name led to is gone, which every caller already handles as a race it lost.

    ``replaced``: the name is of a small record that writers replace whole (by rename) rather
    than remove, so after ESTALE the name most likely leads to a newer version: looked up again
    over :data:`_STALE_WAITS` before it counts as gone.

    ``present`` (implies ``replaced``): the caller saw the name a moment ago (a stat, a listing, a
    reference it handed out), so ENOENT too is a replacement in flight, looked up again over the
    same pauses. A GlusterFS mount answers ENOENT for a record that another mount is renaming a
    new version over: measured with a writer replacing a record every 5 ms through one mount and
    two readers through another, 1 read in about 1,400 on a replicated volume and 1 in 400 on a
    distributed one, where the name never stopped naming a file on any brick. A probe for a
    record that is usually absent (a dedup marker before its first send) leaves it False: ENOENT
    is its common answer and costs no pause.

    ``message``: a message file (:mod:`spoolq.store.codec`), whose header says how long it is: a
    first read that returns all of that is the whole file (no second read to meet its end)."""
    retried = _REPLACED if present else (errno.ESTALE,)
    for pause in _STALE_WAITS if replaced or present else _NO_WAIT:
        if pause:
            time.sleep(pause)
        try:
            return _read_whole(path, message)
        except OSError as e:
            if e.errno not in retried:
                raise
    raise FileNotFoundError(errno.ENOENT, "replaced or removed through another mount", path)


_REPLACED = (errno.ESTALE, errno.ENOENT)


_NO_WAIT = (0.0,)


_READ_SIZE = 1 << 20
#: a message file's header: magic, meta length, body length, crc (spoolq.store.codec)
_MESSAGE_HEADER = struct.Struct(">4sIII")
_MESSAGE_HEADER_SIZE = _MESSAGE_HEADER.size


def _read_whole(path: str, message: bool = False) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunk = os.read(fd, _READ_SIZE)
        if message and len(chunk) >= _MESSAGE_HEADER_SIZE:
            _magic, meta_len, body_len, _crc = _MESSAGE_HEADER.unpack_from(chunk)
            if len(chunk) == _MESSAGE_HEADER_SIZE + meta_len + body_len < _READ_SIZE:
                return chunk  # fewer bytes than asked for, as many as the file holds: all of it
        chunks = [chunk]
        while chunk:
            chunk = os.read(fd, _READ_SIZE)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_ZEROS = bytes(1 << 20)


def write_zeros(path: str, size: int) -> None:
    """Make ``path`` (which must not exist) a file of ``size`` written zero bytes, durable with its
    name: real writes, not ``fallocate`` (an unwritten extent turns written on the first write into
    it, a metadata change that every later ``fdatasync`` of the block would have to commit). On
    failure the partial file is removed and the error raised."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        done = 0
        while done < size:
            done += os.write(fd, memoryview(_ZEROS)[:min(len(_ZEROS), size - done)])
        os.fsync(fd)
        fsync_dir(os.path.dirname(path))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)


def fdatasync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


def make_dirs_durable(path: str, base: str) -> None:
    """Create the missing directories from ``base`` (which must exist) down to ``path``, each
    one's name fsync'd in its parent before the next is made: for records flushed with ``fsync``
    whose directory may be new (archive segments)."""
    rel = os.path.relpath(path, base)
    at = base
    for part in ([] if rel == "." else rel.split("/")):
        parent, at = at, f"{at}/{part}"
        try:
            os.mkdir(at)
        except FileExistsError:
            continue
        fsync_dir(parent)


class TempWriter:
    """Writes complete files under ``<root>/tmp`` with names unique to this process."""

    def __init__(self, tmp_dir: Path, node_id: str) -> None:
        self._dir = str(tmp_dir)
        self._node = "".join(c if c.isalnum() else "_" for c in node_id)[:40]
        self._lock = threading.Lock()
        self._n = 0

    @property
    def prefix(self) -> str:
        """Every temp file this node writes starts with this (then ``<pid>-``)."""
        return f"{self._node}-"

    def write(self, data: bytes, fsync_file: bool = False) -> str:
        """A new temp file holding ``data`` (``fsync``'d with ``fsync_file``), closed: its path."""
        path, fd = self._written(data, fsync_file)
        os.close(fd)
        return path

    @contextlib.contextmanager
    def held(self, data: bytes, fsync_file: bool = False) -> Iterator[str]:
        """:meth:`write` for a block that renames the file: one ``fsync``'d keeps its descriptor open
        until the block ends. On CephFS, a file closed before its rename cannot be renamed or removed
        by another node until the MDS's next tick (up to 5 seconds later); renamed while still open,
        at once. A file not flushed is closed first, so that a FUSE client writes back its data
        before another node can see its name. If the block raises, the temp file is removed (if it
        still has that name)."""
        path, fd = self._written(data, fsync_file)
        if not fsync_file:
            os.close(fd)
            fd = -1
        try:
            yield path
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        finally:
            if fd >= 0:
                os.close(fd)

    def _written(self, data: bytes, fsync_file: bool) -> tuple[str, int]:
        with self._lock:
            self._n += 1
            n = self._n
        path = f"{self._dir}/{self._node}-{os.getpid()}-{threading.get_ident():x}-{n}.tmp"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if fsync_file:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(path)
            except OSError:
                pass
            raise
        return path, fd


#: errnos that mean "that name is not there (any more)": ENOENT, and ESTALE, which a GlusterFS FUSE
#: client returns when another mount removed the file or its directory first (its cached handle is stale)
GONE = (errno.ENOENT, errno.ESTALE)

#: how often :func:`rename_into` re-creates a directory that others keep removing before it gives
#: up; each retry means another process emptied and removed the directory between our ``mkdir``
#: and our ``rename``, which removers avoid for the buckets senders write into (see
#: :data:`spoolq.store.handle.WRITE_WINDOW_MS`), so in practice the second attempt succeeds
RENAME_ATTEMPTS = 1000

#: pauses before the retries of a rename that met a stale directory handle (ESTALE): together
#: longer than the FUSE entry timeout (1 s by default), after which the kernel looks the path up again
_STALE_WAITS = (0.0, 0.05, 0.2, 0.5, 1.0)


def rename_into(src: str, dst_dir: str, name: str, *, base: str) -> None:
    """Rename ``src`` to ``dst_dir/name``, re-creating the directories between ``base`` and
    ``dst_dir`` as often as somebody else removes them.

    **Invariant (directories may vanish, renames into them never fail for it).** Any process may
    remove an empty state, shard or bucket directory at any moment (a poller that emptied a bucket,
    maintenance, purge replacing ``ready/``), on this node or another. FIFO group directories are
    the exception: they are removed only under the queue's lock, when their group holds no message
    (see ``maintenance.remove_idle_groups`` for why); so are standard buckets on GlusterFS, removed
    only under the queue's bucket lock, which renames into old buckets hold (``bucket_guard.py``). Whoever renames a file into a
    directory therefore creates each missing level below ``base`` (the queue's directory, which
    only queue deletion removes) one ``mkdir`` at a time and renames again, until the rename
    succeeds. ``base`` itself is never created: a queue deleted meanwhile is not resurrected.

    On a shared file system the loser of a race may get ESTALE instead of ENOENT (GlusterFS does,
    when another node renamed the file or removed its directory): a fresh listing of ``src``'s
    directory tells a lost race from a stale directory handle, which is retried after the pauses
    of :data:`_STALE_WAITS` (the FUSE cache forgets the handle within about a second).

    Raises FileNotFoundError if ``src`` is gone (someone else moved it first) or ``base`` is gone
    (the queue was deleted); OSError(EAGAIN) after :data:`RENAME_ATTEMPTS` lost races, ESTALE
    when the stale handle outlives the pauses.
    """
    dst = f"{dst_dir}/{name}"
    stale_waits = iter(_STALE_WAITS)
    for _attempt in range(RENAME_ATTEMPTS):
        try:
            os.rename(src, dst)
            return
        except OSError as e:
            if e.errno not in GONE:
                raise
            stale = e.errno == errno.ESTALE
            if not _present(src, stale):
                raise FileNotFoundError(errno.ENOENT, "renamed or removed by someone else", src) from e
        stale = _make_levels(base, dst_dir) or stale
        if stale:
            wait = next(stale_waits, None)
            if wait is None:
                raise OSError(errno.ESTALE, f"{dst_dir} stayed stale while renaming into it")
            time.sleep(wait)
    raise OSError(errno.EAGAIN, f"{dst_dir} was removed {RENAME_ATTEMPTS} times while renaming into it")


class BaseGone(FileNotFoundError):
    """The directory a file was being made or named under (its queue's) was not there: deleted, or
    moved aside for an instant by a delete-if-empty (which may have put it back by now)."""


def _make_levels(base: str, dst_dir: str) -> bool:
    """Create the missing directories from ``base`` (exclusive) down to ``dst_dir``, top first.

    A level removed again right after we made it just ends this pass (the caller's rename fails and
    it comes back). Returns whether a level answered ESTALE (a handle made stale by another mount);
    :class:`BaseGone` when ``base`` itself is gone.
    """
    rel = os.path.relpath(dst_dir, base)
    path = base
    stale = False
    for part in ([] if rel == "." else rel.split("/")):
        path = f"{path}/{part}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        except OSError as e:
            if e.errno not in GONE:
                raise
            stale = e.errno == errno.ESTALE
            break
    if not _present(base, stale):
        raise BaseGone(errno.ENOENT, "queue directory is gone", base)
    return stale


def _present(path: str, stale: bool) -> bool:
    """Whether ``path`` still exists. After ESTALE a stat may be answered from this mount's cache
    (directory listings through FUSE fill it), so the directory is listed: a server round trip."""
    if not stale:
        return os.path.lexists(path)
    return os.path.basename(path) in listdir(os.path.dirname(path))




def write_json_atomic(path: Path, value: Mapping[str, Any], tmp: TempWriter, durable: bool) -> None:
    data = json.dumps(value, indent=1, sort_keys=True).encode()
    with tmp.held(data, fsync_file=durable) as t:
        os.replace(t, path)
    if durable:
        fsync_dir(str(path.parent))


def read_json(path: Path, *, present: bool = False) -> dict[str, Any] | None:
    """A JSON object file that writers replace whole (:func:`write_json_atomic`): the object, or
    None if the file is missing, not a JSON object, or a directory. It is read as a replaced
    record (see :func:`read_file`): a GlusterFS mount whose cached handle was replaced through
    another mount answers ESTALE until it looks the name up again. ``present``: the caller saw
    the name a moment ago, so ENOENT is retried as well (:func:`read_file`)."""
    try:
        value = json.loads(read_file(str(path), replaced=True, present=present))
    except (FileNotFoundError, IsADirectoryError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_json_listed(path: Path) -> dict[str, Any] | None:
    """:func:`read_json` of a record that may be absent (a probe): when no file is found but the
    record's directory lists its name, a replacement through another mount was in flight
    (:func:`read_file`'s ``present``), and the record is read again as present. A true miss costs
    one listing of the directory."""
    data = read_json(path)
    if data is None and path.name in listdir(str(path.parent)):
        data = read_json(path, present=True)
    return data


def stat_listed(path: str) -> os.stat_result:
    """``os.stat(path)`` of a record that writers replace whole: FileNotFoundError only when its
    directory does not list it either (see :func:`read_json_listed`); while the directory lists
    it, stat'd again over the pauses of :data:`_STALE_WAITS`."""
    directory, _, name = path.rpartition("/")
    for pause in _STALE_WAITS[:-1]:
        if pause:
            time.sleep(pause)
        try:
            return os.stat(path)
        except OSError as e:
            if e.errno not in GONE or name not in listdir(directory):
                raise
    time.sleep(_STALE_WAITS[-1])
    return os.stat(path)  # the last look answers as it is (ESTALE stays a storage error)


def listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as e:
        if e.errno == errno.ESTALE:  # removed through another mount (see GONE)
            return []
        raise
