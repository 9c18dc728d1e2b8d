"""Invariant 9: a send never fails because something else touched the same queue at the same moment.

Mixed load on one root, every party its own process and FileStore: senders (one of them with
fsync on) send ≥ 20,000 messages over a standard, a dedup and a FIFO queue and a queue that is
purged every few milliseconds; drainers poll, ack, release and abandon claims on the standard,
dedup and FIFO queues and on the target of a mover that keeps moving the standard queue away;
every drainer also runs maintenance (claim expiry, due delays, bucket clean-up), and drains the
purged queue too, so polls, acks and releases meet purges. Pollers remove
bucket directories the moment they are empty, which is exactly when a sender may be renaming
into them.

Checked: not one store call (send, poll, ack, release, maintenance) failed anywhere, and every message whose send returned, except those
sent to the purged queue, was acknowledged by some drainer (moves give new ids, so messages are
matched by the tag in their self-checking bodies).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spoolq.store import FileStore, QueueKind

from . import contention_workers as W
from .helpers import Child

SENDERS = 4
PER_SENDER = 5_500  # 22,000 sends in all
DRAINERS = 4
SCRIPT = Path(W.__file__)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
@pytest.mark.timeout(900)  # the senders are given 600 s and the others 300 s to finish (about 40 s here)
def test_sends_never_fail_under_polls_acks_maintenance_moves_and_purges(tmp_path: Path) -> None:
    root = tmp_path / "root"
    setup = FileStore(root, node_id="setup", fsync=False)
    for name in (W.STANDARD, W.MOVED, W.PURGED):
        setup.create_queue(name)
    setup.create_queue(W.DEDUP, QueueKind.DEDUP)
    setup.create_queue(W.FIFO, QueueKind.FIFO)
    setup.close()
    stop = tmp_path / "stop"
    send_logs = [tmp_path / f"send-{i}.log" for i in range(SENDERS)]
    drain_logs = [tmp_path / f"drain-{i}.log" for i in range(DRAINERS)]
    senders = [Child("send", str(root), f"s{i}", str(log), str(PER_SENDER), str(i), "1" if i == 0 else "0",
                     script=SCRIPT) for i, log in enumerate(send_logs)]
    others = [Child("drain", str(root), f"d{i}", str(log), str(stop), str(i), script=SCRIPT)
              for i, log in enumerate(drain_logs)]
    others.append(Child("purge", str(root), "p", W.PURGED, str(stop), script=SCRIPT))
    others.append(Child("mover", str(root), "m", W.STANDARD, W.MOVED, str(stop), script=SCRIPT))
    try:
        for s in senders:
            assert s.wait(timeout=600) == 0, s.stderr()
        stop.touch()
        for o in others:
            assert o.wait(timeout=300) == 0, o.stderr()
    finally:
        stop.touch()
        for c in senders + others:
            c.close()

    send_lines = [line for log in send_logs for line in _lines(log)]
    drain_lines = [line for log in drain_logs for line in _lines(log)]
    failures = [line for line in send_lines + drain_lines if line.startswith(("fail", "timeout"))]
    sent = [line.split() for line in send_lines if line.startswith("ok ")]
    assert not failures, f"{len(failures)} failed store calls, first: {failures[:3]}"
    assert len(sent) == SENDERS * PER_SENDER
    acked = {line.split()[1] for line in drain_lines if line.startswith("ack ")}
    missing = [tag for queue, tag in ((q, t) for _ok, q, t in sent) if queue != W.PURGED and tag not in acked]
    assert not missing, f"{len(missing)} sent messages never delivered, e.g. {missing[:5]}"
