"""The restart load's own accounting (:mod:`tests.deploy.restart_load`), against a real ``spoolq serve``.

A send still in flight when the load stops sending counts as sent only once its client has its
answer. The drain must wait for it, or it judges "nothing left to receive" too early, stops the
long polls, and the message is left for the sweep's short polls: reported as *late*, a long-poll
delivery delay that never happened (the drain did not wait at all).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.deploy import restart_load

#: how long after the stop the held sends reach the server: more than the load's long-poll wait
#: (2 s), so that every long poll running when the pollers were stopped has ended by then
HOLD = 3.0


def test_a_send_in_flight_when_sending_stops_is_drained_by_the_long_polls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[restart_load.Load] = []
    start = restart_load.Load.start
    curl = restart_load._curl

    def start_and_keep(self: restart_load.Load) -> None:
        loads.append(self)
        start(self)

    def slow_send(*args: str) -> Any:
        if args[-1].endswith("/send"):
            # an EmoDB send whose client reaches the server late (a curl process starting on a
            # busy machine): in flight when sending stops, it lands after that
            while loads[0].sending.is_set():
                time.sleep(0.01)
            time.sleep(HOLD)
        return curl(*args)

    monkeypatch.setattr(restart_load.Load, "start", start_and_keep)
    monkeypatch.setattr(restart_load, "_curl", slow_send)
    figures = restart_load.run("restart", tmp_path, rounds=0, settle=1.0)
    emo_sent = sum(1 for body in loads[0].tally.sent if body.startswith("emo-"))
    assert emo_sent == 2, figures  # the two EmoDB senders' held sends, nothing else
    assert figures["lost"] == 0 and figures["late"] == 0, figures
