"""The data directory's on-disk format (``<root>/format``, store/root_format.py): recorded once when a
root is made or upgraded, and checked by every start before anything is touched.

* a new root is recorded in this version's format, and opening it again writes nothing;
* a root without the file (every root of spoolq 0.1.0) is opened, its messages kept, and the file added;
* a root in a newer format is refused with one line naming both formats, by the store, by
  ``spoolq serve`` and by ``spoolq check-config``, with nothing on disk changed (names, bytes, times);
* features of the same format that this version does not know are kept, not refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from spoolq import __version__
from spoolq.errors import DataFormatRefused
from spoolq.store import root_format
from spoolq.store.filestore import FileStore
from spoolq.store.model import OutgoingMessage
from tests.e2e.spoolq_server import free_port, running_server
from tests.inside import format_of

CHECKOUT = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every path under ``root`` with its mode, its modification time and (files) its bytes."""
    out: dict[str, tuple[int, int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            data = Path(path).read_bytes() if name in filenames else b""
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_mtime_ns, data)
    st = os.lstat(root)
    out["."] = (st.st_mode, st.st_mtime_ns, b"")
    return out


def record(root: Path) -> dict[str, object]:
    value = json.loads((root / root_format.FORMAT_FILE).read_text())
    assert isinstance(value, dict)
    return value


def old_root(root: Path) -> list[str]:
    """A root as spoolq 0.1.0 left it (no format file), holding three sent messages."""
    store = FileStore(root, node_id="old", fsync=False)
    store.create_queue("orders")
    sent = [store.send("orders", OutgoingMessage(body=f"m{i}".encode())).id for i in range(3)]
    store.close()
    (root / root_format.FORMAT_FILE).unlink()
    return sent


def newer_root(root: Path) -> str:
    old_root(root)
    line = json.dumps({"format": root_format.FORMAT + 1, "features": ["x"], "written_by": "spoolq 9.9.9"})
    (root / root_format.FORMAT_FILE).write_text(line)
    return line


def test_a_new_root_is_recorded_in_this_format_and_opening_it_again_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    FileStore(root, fsync=False).close()
    assert record(root) == {"format": root_format.FORMAT, "features": list(root_format.FEATURES),
                            "written_by": f"spoolq {__version__}"}
    before = snapshot(root / root_format.FORMAT_FILE)
    stat = os.stat(root / root_format.FORMAT_FILE)
    store = FileStore(root, fsync=False)
    assert format_of(store) == root_format.current()
    store.close()
    assert snapshot(root / root_format.FORMAT_FILE) == before
    assert os.stat(root / root_format.FORMAT_FILE).st_ino == stat.st_ino  # not even replaced


def test_a_root_without_a_format_file_is_opened_and_recorded(tmp_path: Path) -> None:
    root = tmp_path / "root"
    sent = old_root(root)
    assert root_format.check_format(root) == root_format.RootFormat(1, (), None)
    store = FileStore(root, fsync=False)
    assert format_of(store).format == root_format.FORMAT
    got = store.poll("orders", limit=10, claim_ttl=30)
    assert sorted(d.message.id for d in got) == sorted(sent)
    store.close()
    assert record(root)["format"] == root_format.FORMAT
    assert not [n for n in os.listdir(root / "tmp") if n.endswith(".tmp")]  # written whole, then renamed


def test_features_this_version_does_not_know_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "root"
    old_root(root)
    (root / root_format.FORMAT_FILE).write_text(json.dumps(
        {"format": 1, "features": ["a-later-feature"], "written_by": "spoolq 0.1.9"}))
    FileStore(root, fsync=False).close()
    assert record(root)["features"] == [*root_format.FEATURES, "a-later-feature"]


def test_a_newer_format_is_refused_by_the_store_with_nothing_changed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    newer_root(root)
    before = snapshot(root)
    with pytest.raises(DataFormatRefused) as refused:
        FileStore(root, fsync=False)
    message = refused.value.message
    assert "\n" not in message
    assert f"on-disk format {root_format.FORMAT + 1} (written by spoolq 9.9.9)" in message
    assert f"this spoolq {__version__} reads formats 1 to {root_format.FORMAT}" in message
    assert snapshot(root) == before


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"format": "2"}', b"[2]", b'{"format": 0}'])
def test_a_damaged_format_file_is_refused_not_overwritten(tmp_path: Path, damage: bytes) -> None:
    root = tmp_path / "root"
    old_root(root)
    (root / root_format.FORMAT_FILE).write_bytes(damage)
    before = snapshot(root)
    with pytest.raises(DataFormatRefused, match=r"has a format file this spoolq .* cannot read"):
        FileStore(root, fsync=False)
    assert snapshot(root) == before


def _spoolq(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env["PYTHONPATH"] = str(CHECKOUT / "service")
    return subprocess.run([sys.executable, "-m", "spoolq.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_serve_and_check_config_refuse_a_newer_format_in_one_line_with_nothing_changed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    newer_root(root)
    before = snapshot(root)
    served = _spoolq("serve", "--root", str(root), "--port", str(free_port()), "--workers", "1")
    assert served.returncode == 3, served.stderr
    said = served.stderr.strip().splitlines()  # where the data is, then the refusal in one line
    lines = [line for line in said if not line.startswith("spoolq: data directory ")]
    assert len(lines) == 1 and len(said) == 2, said
    assert f"on-disk format {root_format.FORMAT + 1}" in lines[0] and f"spoolq {__version__}" in lines[0]
    checked = _spoolq("check-config", "--root", str(root))
    assert checked.returncode == 3
    backed_up = _spoolq("backup", str(tmp_path / "backup"), "--root", str(root))
    assert backed_up.returncode != 0 and f"on-disk format {root_format.FORMAT + 1}" in backed_up.stderr
    assert f"FAILED: the data directory {root} is in on-disk format {root_format.FORMAT + 1}" in checked.stdout
    assert snapshot(root) == before


def test_version_names_the_on_disk_format() -> None:
    done = _spoolq("--version")
    assert done.stdout.strip() == f"spoolq {__version__} (on-disk format {root_format.FORMAT})"


def test_healthz_gives_the_version_and_the_on_disk_format(tmp_path: Path) -> None:
    with running_server(tmp_path, keys=False, workers=1, threads=4) as server:
        health = requests.get(f"{server.url}/healthz", timeout=30).json()
        ready = requests.get(f"{server.url}/readyz", timeout=30).json()
    assert health["version"] == ready["version"] == __version__
    assert health["format"] == ready["format"] == root_format.FORMAT
    assert record(server.root)["format"] == root_format.FORMAT


def test_a_backup_keeps_the_format_and_a_restore_refuses_a_newer_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    sent = old_root(root)
    FileStore(root, fsync=False).close()  # recorded: format 2
    done = _spoolq("backup", str(tmp_path / "b"), "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert record(tmp_path / "b")["format"] == root_format.FORMAT
    done = _spoolq("restore", str(tmp_path / "b"), str(tmp_path / "restored"))
    assert done.returncode == 0, done.stderr
    assert record(tmp_path / "restored")["format"] == root_format.FORMAT
    assert len(FileStore(tmp_path / "restored", fsync=False).poll("orders", limit=10)) == len(sent)
    (tmp_path / "b" / root_format.FORMAT_FILE).write_text(json.dumps({"format": root_format.FORMAT + 1}))
    done = _spoolq("restore", str(tmp_path / "b"), str(tmp_path / "refused"))
    assert done.returncode != 0 and f"on-disk format {root_format.FORMAT + 1}" in done.stderr
    assert not (tmp_path / "refused").exists()


def test_an_upgrade_cut_short_is_done_again_at_the_next_start(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    sent = old_root(root)
    os.unlink(root / "queues" / "orders" / "buckets.lock")

    def crash(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt  # the process dies after the upgrade's steps, before the format is written

    monkeypatch.setattr(root_format, "write_json_atomic", crash)
    with pytest.raises(KeyboardInterrupt):
        FileStore(root, fsync=False)
    assert root_format.check_format(root).format == 1  # still the old format on disk
    monkeypatch.undo()
    store = FileStore(root, fsync=False)
    assert format_of(store).format == root_format.FORMAT
    assert (root / "queues" / "orders" / "buckets.lock").exists()
    assert sorted(d.message.id for d in store.poll("orders", limit=10)) == sorted(sent)
    store.close()


def test_a_format_file_replaced_through_another_mount_is_read_again(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """GlusterFS answers ESTALE for a name another mount replaced, until it looks it up again: nodes
    starting together each record the format of a new root."""
    import errno

    from spoolq.store import fileops

    root = tmp_path / "root"
    FileStore(root, fsync=False).close()
    real, stale = fileops._read_whole, [2]

    def read_whole(path: str, message: bool = False) -> bytes:
        if path.endswith(root_format.FORMAT_FILE) and stale[0]:
            stale[0] -= 1
            raise OSError(errno.ESTALE, "Stale file handle", path)
        return real(path, message)

    monkeypatch.setattr(fileops, "_read_whole", read_whole)
    assert root_format.check_format(root) == root_format.current()
    assert stale == [0]


def test_one_process_records_the_format_and_a_claim_left_by_a_dead_one_is_swept(tmp_path: Path) -> None:
    """Nodes starting together never rename over ``format`` at once: the one that made the claim
    records it, the others serve the root as it is meanwhile."""
    from spoolq.store.maintenance import TMP_MAX_AGE

    root = tmp_path / "root"
    sent = old_root(root)
    claim = root / root_format.CLAIM.format(root_format.FORMAT)
    claim.touch()  # made by a process that died while it recorded the format
    store = FileStore(root, fsync=False)
    assert format_of(store).format == 1 and not (root / root_format.FORMAT_FILE).exists()
    assert sorted(d.message.id for d in store.poll("orders", limit=10)) == sorted(sent)
    old = time.time() - TMP_MAX_AGE - 60
    os.utime(claim, (old, old))  # an hour later:
    store.maintain()  # swept with the old temp files
    store.close()
    assert not claim.exists()
    FileStore(root, fsync=False).close()
    assert record(root)["format"] == root_format.FORMAT and not claim.exists()
