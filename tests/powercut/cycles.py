"""Power-cut cycles: mixed load on a crash disk, a cut at a random moment, a reboot, a check.

One cycle (:func:`run_cycle`):

1. four processes (``workload.py``) open the store on the crash disk and load it: standard,
   at-most-once, dedup and FIFO senders; pollers that ack, release or let claims expire; a
   rate-limited move of a prefilled queue beside maintenance passes;
2. after a random 0.3-1.8 s the power is cut (a random share of the disk's pending blocks
   persisted, some torn), the processes die with it;
3. the reboot: ext4 replays its journal, ``e2fsck -fn`` must find nothing, the disk comes back;
4. a checker process opens the store (journal recovery runs), checks dedup and FIFO state, lets
   the move finish, drains every queue and reports; :func:`verify` holds that report against
   what the processes logged (``workload.py`` says what each line means).

A power cut reboots the machine, so every boot gets a new kernel boot id, which is how the store
tells a power failure (replay the commit journal) from a process crash (nothing to replay): each
process runs in its own mount namespace (``unshare -m``) with a file of the current "boot" bound
over ``/proc/sys/kernel/random/boot_id``. The store's code is unchanged.
"""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from tests.powercut.crashdisk import CrashDisk
from tests.powercut.workload import queues

CHECKOUT = Path(__file__).resolve().parents[2]
ROLES = ("send_std", "send_dd_fifo", "poll", "move")
_BIND_BOOT_ID = 'mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"'


@dataclass
class Tally:
    """What a series of cuts found; every field after ``acked_sends`` must stay 0 (but ``lost`` for
    the no-flush store), the fields from ``quarantined`` on are information."""

    cuts: int = 0
    acked_sends: int = 0
    lost: int = 0
    corrupt_delivered: int = 0
    duplicates: int = 0
    at_most_once_twice: int = 0
    fifo_out_of_order: int = 0
    fifo_dedup_forgotten: int = 0
    dedup_not_collapsed: int = 0
    move_wrong: int = 0
    journal_left: int = 0
    fsck_problems: int = 0
    moved_came_back: int = 0
    quarantined: int = 0
    journal_files_replayed: int = 0
    journal_files_prepared: int = 0  # of those, files written full of zeros ahead of time
    pending_blocks: int = 0
    persisted_blocks: int = 0
    torn_blocks: int = 0
    seconds: float = 0.0

    def add(self, other: Tally) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def failures(self, flush: str) -> dict[str, int]:
        names = [f.name for f in fields(self)]
        bad = names[names.index("lost"):names.index("quarantined")]
        if flush == "none":
            bad = ["corrupt_delivered", "fsck_problems"]  # it loses and repeats; nothing torn reaches a reader
        return {n: getattr(self, n) for n in bad if getattr(self, n)}


class Process:
    """A workload process in its own mount namespace with this boot's id."""

    def __init__(self, boot_file: Path, *args: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT), str(CHECKOUT / "service"), env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", _BIND_BOOT_ID, str(boot_file),
             sys.executable, "-m", "tests.powercut.workload", *args],
            cwd=CHECKOUT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout: float = 60.0) -> None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.proc.kill()
            raise AssertionError(f"workload process not ready: {line!r} {self.proc.stderr.read()[-2000:]!r}"
                                 if self.proc.stderr else "workload process not ready")

    def finish(self, timeout: float = 180.0) -> str:
        out, err = self.proc.communicate(timeout=timeout)
        if self.proc.returncode != 0:
            raise AssertionError(f"checker failed ({self.proc.returncode}): {err.decode(errors='replace')[-3000:]}")
        return out.decode()


def new_boot(boot_file: Path) -> None:
    boot_file.write_text(os.urandom(16).hex() + "\n")


def run_cycle(disk: CrashDisk, flush: str, cycle: int, rng: random.Random, logs: Path, boot_file: Path) -> Tally:
    start = time.monotonic()
    root = str(disk.mountpoint / "root")
    cycle_logs = logs / f"cycle-{cycle}"
    cycle_logs.mkdir(parents=True)
    seed = rng.randrange(1 << 30)
    procs = [Process(boot_file, role, root, str(cycle_logs), flush, str(cycle), str(seed + i))
             for i, role in enumerate(ROLES)]
    try:
        for p in procs:
            p.wait_ready()
        time.sleep(rng.uniform(0.3, 1.8))
    finally:
        report = disk.cut(seed=seed, persist=rng.choice([0.0, rng.random()]), torn=rng.random() * 0.5,
                          kill=[p.proc.pid for p in procs])
        for p in procs:
            p.proc.communicate(timeout=60)
    tally = Tally(cuts=1, pending_blocks=report.pending, persisted_blocks=report.persisted, torn_blocks=report.torn)
    problem = disk.reboot_checked()
    if problem:
        print(f"cycle {cycle}: {problem}")
        tally.fsck_problems += 1
    new_boot(boot_file)
    result = json.loads(Process(boot_file, "check", root, str(cycle_logs), flush, str(cycle), "0").finish())
    tally.add(verify(cycle, cycle_logs, result, flushing=flush != "none"))
    tally.seconds = time.monotonic() - start
    return tally


def _lines(path: Path) -> list[list[str]]:
    """The whole lines of a log (a line cut by the kill has no newline and is dropped)."""
    if not path.exists():
        return []
    return [line.split() for line in path.read_text().split("\n")[:-1]]


def verify(cycle: int, logs: Path, result: dict[str, object], *, flushing: bool = True) -> Tally:
    """Hold the checker's report against what the processes were told before the cut."""
    q = queues(cycle)
    t = Tally()
    sent: dict[str, dict[str, str]] = {name: {} for name in q}  # queue -> acknowledged id -> tag
    by_queue = {queue: name for name, queue in q.items()}
    for role in ("send_std", "send_dd_fifo", "move"):
        for w in _lines(logs / f"{role}.log"):
            if w[0] == "S":
                sent[by_queue[w[1]]][w[2]] = w[3]
    ack_intent: set[str] = set()
    amo_delivered: set[str] = set()
    amo_poll_open = False
    for w in _lines(logs / "poll.log"):
        if w[0] == "P":
            ack_intent.update(w[2:])
        elif w[0] == "X":
            t.corrupt_delivered += 1
        elif w[1:2] == [q["amo"]]:
            amo_poll_open = w[0] == "Q"
            if w[0] == "D":
                amo_delivered.add(w[2])
    found = result["found"]
    assert isinstance(found, dict)
    ids = {name: Counter(i for i, _tag in found[name]) for name in q}
    t.acked_sends = sum(len(v) for v in sent.values())

    for name in ("std", "dd", "ff"):
        t.duplicates += sum(n - 1 for n in ids[name].values() if n > 1)
        missing = [i for i in sent[name] if ids[name][i] == 0 and i not in ack_intent]
        t.lost += len(missing)
        if missing and flushing:
            print(f"cycle {cycle}: {name} lost {missing[:5]}")
    # at-most-once: never seen again once delivered; missing only if a poll cut short may have taken it
    t.at_most_once_twice += sum(1 for i in amo_delivered if ids["amo"][i])
    t.duplicates += sum(n - 1 for n in ids["amo"].values() if n > 1)
    amo_missing = [i for i in sent["amo"] if ids["amo"][i] == 0 and i not in amo_delivered]
    t.lost += max(0, len(amo_missing) - int(amo_poll_open))
    # FIFO: every group drains in the order it was sent
    last: dict[str, int] = {}
    for _i, tag in found["ff"]:
        group, n = tag[1:].split(".")
        if int(n) <= last.get(group, -1):
            t.fifo_out_of_order += 1
        last[group] = int(n)
    # the move: every prefilled message in one of the two queues, once; a started move complete
    # with every message it moved in the destination, nothing else left in the source (a copy
    # beyond the first of a moved message came back: written back into the source by a replay,
    # where it stayed or was moved again by the resumed move)
    src, dst = (Counter(tag for _i, tag in found[name]) for name in ("mvsrc", "mvdst"))
    both = src + dst
    t.lost += sum(1 for tag in sent["mvsrc"].values() if both[tag] == 0)
    t.moved_came_back += sum(n - 1 for n in both.values() if n > 1)
    moves = result.get("moves") or []
    assert isinstance(moves, list)
    for mv in moves:
        if mv["state"] != "COMPLETE" or mv["moved"] != len(dst) or any(not dst[tag] for tag in src):
            print(f"cycle {cycle}: move {mv} with {len(found['mvsrc'])} left, {len(found['mvdst'])} moved")
            t.move_wrong += 1
    for key in ("corrupt_delivered", "dedup_not_collapsed", "fifo_dedup_forgotten", "quarantined"):
        value = result.get(key, 0)
        assert isinstance(value, int)
        setattr(t, key, getattr(t, key) + value)
    t.journal_left = int(result.get("journal_files_after", 0))  # type: ignore[call-overload]
    t.journal_files_replayed = int(result.get("journal_files_before", 0))  # type: ignore[call-overload]
    t.journal_files_prepared = int(result.get("journal_files_prepared", 0))  # type: ignore[call-overload]
    return t


def run_cuts(disk: CrashDisk, flush: str, cuts: int, logs: Path, seed: int | None = None) -> Tally:
    """``cuts`` cycles in a row on one disk; the seed is printed (``SPOOLQ_POWERCUT_SEED`` repeats a run)."""
    seed = int(os.environ.get("SPOOLQ_POWERCUT_SEED") or seed or time.time_ns())
    print(f"SPOOLQ_POWERCUT_SEED={seed}")
    rng = random.Random(seed)
    logs.mkdir(parents=True, exist_ok=True)
    boot_file = logs / "boot_id"
    new_boot(boot_file)
    total = Tally()
    for cycle in range(cuts):
        total.add(run_cycle(disk, flush, cycle, rng, logs, boot_file))
    record(flush, total)
    return total


def record(flush: str, tally: Tally) -> None:
    """Print the figures and append them to ``test-artifacts/powercut.jsonl`` (kept after the run)."""
    line = {"flush": flush, **asdict(tally)}
    print(json.dumps(line))
    out = CHECKOUT / "test-artifacts"
    out.mkdir(exist_ok=True)
    with open(out / "powercut.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")
