"""The commit journal's replay after a power cut (``--flush journal``), on the crash disk.

* A transfer is never undone: messages sent by one process (their records in its journal, which
  is neither retired nor checkpointed: it is alive when the power fails) and then dead-lettered,
  or moved by a completed (flushed) move, by another process of the same node, are each found
  exactly once after the cut, where the transfer put them. Before, the replay wrote every one of
  them back into its first queue.
* A disk that lost power and is mounted again without the machine rebooting (the same kernel boot
  id: a removable, network or VM disk) is replayed: the page cache that held the dead process's
  message files went with the mount. Before, the same boot id meant "a process crash, the cache has
  it all", and the messages whose files the cut lost were lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from spoolq.store import FileStore
from spoolq.store import layout as L
from spoolq.store.codec import CorruptMessage, decode_message
from spoolq.store.fileops import read_file
from tests.powercut.crashdisk import CrashDisk
from tests.powercut.cycles import CHECKOUT, new_boot
from tests.store.helpers import check_body

pytestmark = [pytest.mark.powercut, pytest.mark.timeout(300)]

N = 60
_BIND_BOOT_ID = 'mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"'


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT), str(CHECKOUT / "service"), env.get("PYTHONPATH", "")])
    return env


def _role(role: str, root: Path, boot_file: Path | None) -> subprocess.Popen[bytes]:
    """A ``transfers.py`` process; with ``boot_file``, in a mount namespace of its own that sees
    that file as the kernel's boot id (a new boot, as ``cycles.py`` does)."""
    cmd = [sys.executable, "-m", "tests.powercut.transfers", role, str(root), str(N)]
    if boot_file is not None:
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _BIND_BOOT_ID, str(boot_file), *cmd]
    return subprocess.Popen(cmd, cwd=CHECKOUT, env=_env(), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)


def _line(proc: subprocess.Popen[bytes]) -> list[str]:
    assert proc.stdout is not None
    return proc.stdout.readline().decode().split()


def test_a_transfer_is_never_undone_by_the_replay(crash_disk: CrashDisk, tmp_path: Path) -> None:
    root = crash_disk.mountpoint / "root"
    boot_file = tmp_path / "boot_id"
    new_boot(boot_file)
    proc = _role("transfers", root, boot_file)
    done = _line(proc)
    assert done[:1] == ["done"], f"the transfers did not complete: {done}"
    crash_disk.cut(kill=[proc.pid, int(done[1])])  # nothing that was not flushed survives
    proc.communicate(timeout=60)
    assert crash_disk.reboot_checked() == ""
    assert any(n.endswith(".jnl") for n in os.listdir(root / "journal")), "no journal left to replay: proves nothing"

    new_boot(boot_file)
    check = _role("check", root, boot_file)
    out, _ = check.communicate(timeout=120)
    assert check.returncode == 0
    found = {q: Counter(tags) for q, tags in json.loads(out).items()}
    sent = {q: Counter(f"{q}{i}" for i in range(N)) for q in ("moved", "dead")}
    assert found["moved"] == Counter(), f"moved messages came back into their queue: {sorted(found['moved'])[:5]}"
    assert found["dst"] == sent["moved"], "the move's destination does not hold each moved message once"
    both = found["dead"] + found["dlq"]
    assert both == sent["dead"], f"dead letters lost or twice: {sorted((both - sent['dead']).elements())[:5]}"
    assert found["dead"] == Counter(), "dead letters came back into their queue"


def test_a_disk_mounted_again_without_a_reboot_is_replayed(crash_disk: CrashDisk) -> None:
    root = crash_disk.mountpoint / "root"
    store = FileStore(root, node_id="jtnode", flush="journal")
    for q in ("moved", "dead"):
        store.create_queue(q)
    store.close()
    sender = _role("sender", root, None)  # this machine's own boot id, before and after the cut
    sent = _line(sender)
    assert sent[:1] == ["sent"] and len(sent) == 2 * N + 1
    crash_disk.cut(kill=[sender.pid])
    sender.communicate(timeout=60)
    assert crash_disk.reboot_checked() == ""

    def whole(q: str) -> set[str]:
        out = set()
        for dirpath, _dirs, names in os.walk(root / "queues" / q / "ready"):
            for n in names:
                try:
                    decode_message(read_file(f"{dirpath}/{n}"))
                    out.add(n[:40])
                except (CorruptMessage, OSError):
                    pass
        return out
    assert len(whole("moved") | whole("dead")) < 2 * N, "the cut lost no message file: proves nothing"

    store = FileStore(root, node_id="jtnode", flush="journal")
    try:
        assert not any(n.endswith(".jnl") for n in os.listdir(root / "journal")), "the journal was not retired"
        got = {d.message.id: check_body(d.message.body) for q in ("moved", "dead")
               for d in store.poll(q, limit=1000, claim_ttl=60)}
        assert sorted(got) == sorted(sent[1:]), "acknowledged sends lost: the journal was not replayed"
        assert all(L.ID_RE.match(i) for i in got)
    finally:
        store.close()
