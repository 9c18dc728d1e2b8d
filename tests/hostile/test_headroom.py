"""Readiness that tells the truth: a data directory filling up, through a real ``spoolq serve``.

A small real ext4 (a loop-mounted file, as ``tests/e2e/test_inode_headroom.py`` makes it; no
reserved blocks, so that what the server can write is what ``statvfs`` says is free) is filled
through the MQ door, once with 60 KB messages until its bytes run out, once with tiny ones until
its inodes do, with the default flush there (the commit journal) and ``--max-body-bytes 65536``.
After every send, ``/readyz``. What is checked:

* ``/readyz`` warns (200, ``"status": "warning"``) before the first refusal, and before it ever
  answers 503;
* it answers 503 from the first refusal on: whenever a send is refused (503 with
  ``Retry-After``), the ``/readyz`` that follows is 503, and ``spoolq_store_writable`` is 0;
* the commit journal's files stay within their share of the disk (``journal_bytes`` against
  ``journal_limit_bytes`` in ``/readyz``; a quarter of slack for the files written since the
  last checkpoint);
* nothing acknowledged is lost: every acknowledged message is fetched back whole.

Before ``/readyz`` judged the room for the largest message, it answered 200 while 64 KiB sends
were refused, and never warned.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from tests.e2e.spoolq_server import Server, free_port

pytestmark = [pytest.mark.hostile, pytest.mark.timeout(300)]

BODY = 60_000


@dataclass
class Run:
    acked: dict[int, bytes] = field(default_factory=dict)
    #: (send status, /readyz status, its "status") after each send
    steps: list[tuple[int, int, str]] = field(default_factory=list)
    journal_peak: tuple[int, int] = (0, 0)  # (journal_bytes, journal_limit_bytes) at its largest


def _loop_ext4(tmp_path: Path, mib: int, inodes: int | None) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root (mount -o loop)")
    if shutil.which("mkfs.ext4") is None or shutil.which("losetup") is None:
        pytest.skip("needs mkfs.ext4 and losetup (scripts/system-deps crashdisk)")
    image, mnt = tmp_path / "disk.img", tmp_path / "mnt"
    with open(image, "wb") as f:
        f.truncate(mib << 20)
    extra = ["-N", str(inodes)] if inodes else []
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", *extra, "-E", "nodiscard", str(image)], check=True,
                   capture_output=True, timeout=60)
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], check=True, capture_output=True, timeout=60)
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=60)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    yield from _loop_ext4(tmp_path, 12, None)


@pytest.fixture
def few_inodes(tmp_path: Path) -> Iterator[Path]:
    yield from _loop_ext4(tmp_path, 32, 256)


def _fill(server: Server, body_of: callable, limit: int) -> Run:  # type: ignore[valid-type]
    http, url, run = requests.Session(), server.url, Run()
    assert http.put(f"{url}/mq/fill", timeout=30).status_code in (200, 201)
    refusals_after = 0
    for n in range(limit):
        body = body_of(n)
        r = http.post(f"{url}/mq/fill/messages", data=body, timeout=60)
        if r.status_code == 201:
            run.acked[n] = body
        else:
            assert r.status_code == 503 and r.headers.get("Retry-After"), (r.status_code, r.text)
            refusals_after += 1
        ready = http.get(f"{url}/readyz", timeout=60)
        details = ready.json()
        run.steps.append((r.status_code, ready.status_code, details["status"]))
        store = details["store"]
        if store.get("journal_bytes", 0) > run.journal_peak[0]:
            run.journal_peak = (store["journal_bytes"], store["journal_limit_bytes"])
        if refusals_after >= 5:
            break
    return run


def _check(run: Run, server: Server) -> None:
    sends = [s for s, _r, _t in run.steps]
    assert 503 in sends, "the file system never filled up"
    first_refusal = sends.index(503)
    first_unready = next(i for i, (_s, r, _t) in enumerate(run.steps) if r == 503)
    warnings = [i for i, (_s, r, t) in enumerate(run.steps) if r == 200 and t == "warning"]
    print(f"\n{len(run.acked)} sends acknowledged; /readyz warned from send {warnings[:1]}, 503 from send "
          f"{first_unready}, first refusal at send {first_refusal}; journal peak {run.journal_peak}")
    assert warnings and warnings[0] < first_unready <= first_refusal, (warnings[:1], first_unready, first_refusal)
    refused_yet_ready = [i for i, (s, r, _t) in enumerate(run.steps) if s == 503 and r != 503]
    assert not refused_yet_ready, f"/readyz did not say 503 after the refused sends {refused_yet_ready}"
    time.sleep(3.2)  # the metrics' snapshot is up to 3 s old
    metrics = requests.get(f"{server.url}/metrics", timeout=30).text
    assert re.search(r"^spoolq_store_writable 0\.0$", metrics, re.M), "spoolq_store_writable is not 0"
    assert re.search(r"^spoolq_store_space_low 1\.0$", metrics, re.M)
    assert re.search(r"^spoolq_journal_limit_bytes [1-9]", metrics, re.M)


def _fetch_all(server: Server) -> dict[int, bytes]:
    got: dict[int, bytes] = {}
    http = requests.Session()
    while True:
        r = http.get(f"{server.url}/mq/fill/messages", params={"ttl": 600}, timeout=60)
        if r.status_code == 204:
            return got
        assert r.status_code == 200, r.text
        got[int(r.content[:6])] = r.content


def _serve(root: Path, tmp_path: Path) -> Server:
    server = Server(root=root, port=free_port(), config=None, workers=2, threads=4, log=tmp_path / "server.log",
                    extra_args=("--max-body-bytes", "65536"))
    server.start()
    return server


def test_readyz_warns_before_the_bytes_run_out_and_is_503_from_the_first_refusal(small_disk: Path,
                                                                                  tmp_path: Path) -> None:
    server = _serve(small_disk / "spoolq", tmp_path)
    try:
        assert requests.get(f"{server.url}/readyz", timeout=30).json()["store"]["journal"] is True
        run = _fill(server, lambda n: b"%06d" % n + os.urandom(BODY // 2).hex().encode()[:BODY - 6], 400)
        _check(run, server)
        used, limit = run.journal_peak
        size = os.statvfs(small_disk).f_blocks * os.statvfs(small_disk).f_frsize
        # within its share, but for the files written since the last checkpoint (a quarter of it here)
        assert 0 < limit <= size * 0.2 and used <= limit * 5 // 4, (used, limit, size)
        assert _fetch_all(server) == run.acked
    finally:
        server.stop()


def test_readyz_warns_before_the_inodes_run_out_and_is_503_from_the_first_refusal(few_inodes: Path,
                                                                                   tmp_path: Path) -> None:
    server = _serve(few_inodes / "spoolq", tmp_path)
    try:
        run = _fill(server, lambda n: b"%06d" % n, 600)
        _check(run, server)
        assert _fetch_all(server) == run.acked
    finally:
        server.stop()
