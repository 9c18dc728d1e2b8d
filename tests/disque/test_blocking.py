"""The dispatcher of blocked GETJOBs (:mod:`spoolq.disque.blocking`) on its own event loop, with a
scripted poll: when each of a waiter's queues is polled, and what the waiter is answered."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from spoolq.disque.blocking import Dispatcher, Waiter

JOB = [["disque:b", "D-1", b"body"]]


class ScriptedPolls:
    """Polls of queue ``a`` take ``slow`` seconds and find nothing; queue ``b`` holds one job
    from ``job_from`` on (monotonic time)."""

    def __init__(self, slow: float, job_from: float) -> None:
        self.slow, self.job_from = slow, job_from
        self.polled: list[tuple[str, float]] = []

    async def fetch(self, _w: Waiter, queue: str) -> list[list[Any]]:
        self.polled.append((queue, time.monotonic()))
        if queue == "a":
            await asyncio.sleep(self.slow)
            return []
        return JOB if time.monotonic() >= self.job_from else []


def _answer(polls: ScriptedPolls, rescan: float, timeout: float) -> tuple[list[list[Any]] | None, float]:
    async def main() -> tuple[list[list[Any]] | None, float]:
        loop = asyncio.get_running_loop()
        d = Dispatcher(loop, polls.fetch, lambda rows: None, rescan=rescan)
        started = time.monotonic()
        w = d.block(("a", "b"), 1, False, timeout)
        answer = await w.future
        return answer, time.monotonic() - started

    # a thread of its own: its own event loop, whatever an earlier test left in this thread's
    with ThreadPoolExecutor(1) as runner:
        return runner.submit(asyncio.run, main()).result(30)


def test_a_queue_passed_over_while_another_is_polled_is_polled_when_that_poll_ends() -> None:
    """A waiter on ``a`` and ``b``: every drain of ``a`` starts first and takes a while, so every
    drain of ``b`` (its first, and each tick's) finds the waiter busy. ``b``'s job must still be
    handed over when ``a``'s poll ends, not at the timeout (before: the job stayed in ``b`` until
    the GETJOB timed out, with a tick every 50 ms)."""
    polls = ScriptedPolls(slow=0.05, job_from=0.0)
    answer, took = _answer(polls, rescan=0.05, timeout=3.0)
    assert answer == JOB, f"the waiter was answered {answer!r} after {took:.2f} s: b was never polled"
    assert took < 1.0
    assert [q for q, _t in polls.polled][:2] == ["a", "b"]


def test_a_job_that_comes_while_another_queue_is_polled_is_handed_over() -> None:
    """The job lands in ``b`` while ``a``'s poll runs (a wake-up then finds the waiter busy); with
    ticks far apart, it is handed over once that poll ends."""
    polls = ScriptedPolls(slow=0.2, job_from=time.monotonic() + 0.1)
    answer, took = _answer(polls, rescan=10.0, timeout=3.0)
    assert answer == JOB
    assert took < 1.0, f"answered after {took:.2f} s"


def test_the_tick_slows_again_once_no_waiter_needs_it_fast() -> None:
    """A GETJOB on a queue that does not exist yet asks for a re-poll every 50 ms; once it is
    answered, the tick goes back to the re-scan interval for the clients still blocked (before:
    every 50 ms for as long as the process ran, polling their queues 20 times a second)."""
    polls = ScriptedPolls(slow=0.0, job_from=float("inf"))  # nothing anywhere

    async def main() -> list[float]:
        d = Dispatcher(asyncio.get_running_loop(), polls.fetch, lambda rows: None, rescan=1.0)
        soon = d.block(("not-yet",), 1, False, 0.1)
        d.watching("not-yet", "/root/queues/not-yet", 0, 0.05)  # what the store answers for it
        later = d.block(("b",), 1, False, 1.4)
        d.watching("b", "/root/queues/b", 0, 1.0)
        await soon.future
        answered = time.monotonic()
        await later.future
        return [t - answered for q, t in polls.polled if q == "b" and t > answered]

    with ThreadPoolExecutor(1) as runner:
        after = runner.submit(asyncio.run, main()).result(30)
    assert len(after) <= 2, f"b polled {len(after)} times in the 1.3 s after the fast waiter left"
