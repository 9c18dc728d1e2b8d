"""Restarts and kill -9: acknowledged ADDJOBs survive, RETRY 0 jobs are never delivered twice, PAUSE persists."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis

from tests.disque.disque_server import DisqueServer

pytestmark = pytest.mark.slow


def test_kill9_during_addjob_storm_keeps_every_acknowledged_job(tmp_path: Path) -> None:
    s = DisqueServer(root=tmp_path / "root", log=tmp_path / "log")
    s.start()
    acked: list[list[bytes]] = [[] for _ in range(8)]
    stop = threading.Event()

    def producer(n: int) -> None:
        r = s.client()
        i = 0
        while not stop.is_set():
            try:
                jid = r.execute_command("ADDJOB", "storm", f"{n}-{i}", 0)
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                return
            acked[n].append(bytes(jid))
            i += 1

    threads = [threading.Thread(target=producer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    # the kill comes in the middle of the storm: once it runs (on a busy machine the first replies
    # took over 1.5 s), and half a second into it
    deadline = time.monotonic() + 60
    while sum(map(len, acked)) < 100 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    s.kill9()
    stop.set()
    for t in threads:
        t.join(30)
    replied = [jid for ids in acked for jid in ids]
    assert len(replied) > 50
    s.start()
    try:
        r = s.client()
        seen = set(r.execute_command("JSCAN", "BUSYLOOP", "QUEUE", "storm")[1])
        missing = [jid for jid in replied if jid not in seen]
        assert not missing, f"{len(missing)} of {len(replied)} acknowledged jobs lost"
        assert r.execute_command("QLEN", "storm") >= len(replied)
    finally:
        s.stop()


def test_retry_zero_never_redelivered_after_a_crash(tmp_path: Path) -> None:
    s = DisqueServer(root=tmp_path / "root", log=tmp_path / "log")
    s.start()
    r = s.client()
    ids = [r.execute_command("ADDJOB", "amo", f"j{i}", 0, "RETRY", 0) for i in range(20)]
    delivered = [row[1] for row in r.execute_command("GETJOB", "COUNT", 10, "FROM", "amo")]
    assert len(delivered) == 10
    s.kill9()
    s.start()
    try:
        r = s.client()
        rest = r.execute_command("GETJOB", "COUNT", 100, "TIMEOUT", 2000, "FROM", "amo") or []
        again = [row[1] for row in rest]
        assert not set(again) & set(delivered)
        assert sorted(again + delivered) == sorted(ids)
        assert r.execute_command("GETJOB", "TIMEOUT", 1500, "FROM", "amo") is None
    finally:
        s.stop()


def test_pause_and_unacked_jobs_survive_a_restart(tmp_path: Path) -> None:
    s = DisqueServer(root=tmp_path / "root", log=tmp_path / "log")
    s.start()
    r = s.client()
    jid = r.execute_command("ADDJOB", "p", "x", 0, "RETRY", 2)
    assert r.execute_command("GETJOB", "FROM", "p")[0][1] == jid
    assert r.execute_command("PAUSE", "p", "in") == b"in"
    s.stop()
    s.start()
    try:
        r = s.client()
        assert r.execute_command("PAUSE", "p", "state") == b"in"
        with pytest.raises(redis.ResponseError, match="Queue paused in input"):
            r.execute_command("ADDJOB", "p", "y", 0)
        got = r.execute_command("GETJOB", "TIMEOUT", 5000, "FROM", "p")  # RETRY brings it back
        assert got[0][1] == jid
    finally:
        s.stop()


def test_listener_killed_alone_is_started_again(tmp_path: Path) -> None:
    import os
    import signal

    from tests.disque.disque_server import children

    s = DisqueServer(root=tmp_path / "root", log=tmp_path / "log")
    s.start()
    try:
        r = s.client()
        jid = r.execute_command("ADDJOB", "sup", "x", 0)
        [pid] = [p for p in children(s.pids()[0])
                 if "spoolq.disque.server" in Path(f"/proc/{p}/cmdline").read_text().replace("\0", " ")]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                assert s.client().execute_command("QLEN", "sup") == 1
                break
            except redis.ConnectionError:
                time.sleep(0.2)
        else:
            pytest.fail("the Disque listener did not come back")
        assert s.client().execute_command("GETJOB", "FROM", "sup")[0][1] == jid
    finally:
        s.stop()


def test_killed_listener_leaves_no_phantom_blocked_getjob_and_keeps_its_counts(tmp_path: Path) -> None:
    """The listener killed while a GETJOB is blocked: once it is started again /metrics shows no
    poll waiting (the supervisor drops the dead process's live gauge), and the commands the dead
    process answered stay counted (counters of dead processes are kept, as a gunicorn worker's)."""
    import os
    import signal
    import socket

    from tests.disque.disque_server import children, scrape, scrape_settled, value

    s = DisqueServer(root=tmp_path / "root", log=tmp_path / "log")
    s.start()
    try:
        s.client().execute_command("ADDJOB", "gone", "x", 0)
        blocked = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        blocked.sendall(b"*5\r\n$6\r\nGETJOB\r\n$7\r\nTIMEOUT\r\n$5\r\n60000\r\n$4\r\nFROM\r\n$5\r\nempty\r\n")

        def waiting() -> float:
            return value(scrape(s), "spoolq_long_polls_waiting", door="disque")

        deadline = time.monotonic() + 10
        while waiting() != 1:
            assert time.monotonic() < deadline, "the blocked GETJOB never showed in /metrics"
            time.sleep(0.05)
        [pid] = [p for p in children(s.pids()[0])
                 if "spoolq.disque.server" in Path(f"/proc/{p}/cmdline").read_text().replace("\0", " ")]
        os.kill(pid, signal.SIGKILL)
        blocked.close()
        deadline = time.monotonic() + 20
        while True:
            try:
                assert s.client().execute_command("QLEN", "gone") == 1
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "the Disque listener did not come back"
                time.sleep(0.2)
        scraped = scrape_settled(s)
        assert value(scraped, "spoolq_long_polls_waiting", door="disque") == 0
        assert value(scraped, "spoolq_commands_total", door="disque", command="ADDJOB", result="ok") == 1
        assert value(scraped, "spoolq_messages_total", door="disque", operation="send") == 1
    finally:
        s.stop()
