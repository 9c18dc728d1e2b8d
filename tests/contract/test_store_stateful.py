"""Hypothesis stateful test: a simple in-memory model against each store (the file store, and the
in-memory store of the door tests)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from spoolq.store import FileStore, OutgoingMessage, QueueKind, QueueStore
from tests.conftest import FakeClock
from tests.contract.stores import maintain
from tests.http.fakes import FakeStore

Q = "model-q"


@dataclass
class Modelled:
    body: bytes
    claimed_until: float = 0.0  # 0 = ready
    receipt: str = ""
    receives: int = 0


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="spoolq-hyp-")
        self.clock = FakeClock()
        self.store = self.make_store()
        self.model: dict[str, Modelled] = {}
        self.counter = 0

    def make_store(self) -> QueueStore:
        return FileStore(Path(self.dir) / "root", fsync=False, clock=self.clock, node_id="hyp")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _ready(self) -> list[str]:
        return [i for i, m in self.model.items() if m.claimed_until <= self.clock()]

    def _claimed(self) -> list[str]:
        return [i for i, m in self.model.items() if m.claimed_until > self.clock()]

    @rule(n=st.integers(1, 5))
    def send(self, n: int) -> None:
        batch = []
        for _ in range(n):
            self.counter += 1
            batch.append(OutgoingMessage(b"m%d" % self.counter))
        results = self.store.send_batch(Q, batch, create=QueueKind.STANDARD)
        for r, m in zip(results, batch, strict=True):
            assert r.id not in self.model
            self.model[r.id] = Modelled(m.body)

    @rule(limit=st.integers(1, 7), ttl=st.integers(1, 60))
    def poll(self, limit: int, ttl: int) -> None:
        ready = set(self._ready())
        got = self.store.poll(Q, limit=limit, claim_ttl=ttl)
        assert len(got) == min(limit, len(ready))
        ids = [d.message.id for d in got]
        assert len(set(ids)) == len(ids)
        for d in got:
            assert d.message.id in ready, "delivered a message that was not visible"
            m = self.model[d.message.id]
            assert d.message.body == m.body
            m.receives += 1
            assert d.message.receive_count == m.receives
            m.claimed_until = self.clock() + ttl
            m.receipt = d.receipt

    @precondition(lambda self: any(m.receipt for m in self.model.values()))
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(i for i, m in self.model.items() if m.receipt)))
        # the latest receipt deletes, live or run out: nobody received the message since
        assert self.store.ack(Q, [self.model[mid].receipt]) == [True]
        del self.model[mid]

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def ack_by_id(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(self.model)))
        assert self.store.ack(Q, [mid]) == [True]
        del self.model[mid]

    @precondition(lambda self: any(m.receipt and m.claimed_until > 0 for m in self.model.values()))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(i for i, m in self.model.items() if m.receipt)))
        m = self.model[mid]
        live = m.claimed_until > self.clock()
        assert self.store.release(Q, [m.receipt]) == [live]
        m.claimed_until, m.receipt = 0.0, ""

    @precondition(lambda self: bool(self._claimed()))
    @rule(data=st.data(), ttl=st.integers(1, 100))
    def renew(self, data: st.DataObject, ttl: int) -> None:
        mid = data.draw(st.sampled_from(sorted(self._claimed())))
        m = self.model[mid]
        assert self.store.renew(Q, [mid], ttl) == [True]
        m.claimed_until = max(m.claimed_until, self.clock() + ttl)

    @rule(seconds=st.sampled_from([0.5, 1, 5, 30, 61]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        maintain(self.store)
        for m in self.model.values():
            if 0 < m.claimed_until <= self.clock():
                m.claimed_until = 0.0

    @rule()
    def unclaim_all(self) -> None:
        self.store.unclaim_all(Q)
        for m in self.model.values():
            m.claimed_until, m.receipt = 0.0, ""

    @invariant()
    def counts_match(self) -> None:
        c = self.store.counts(Q)
        assert c.total == len(self.model)
        assert c.claimed == len(self._claimed())
        assert self.store.claim_count(Q) == len(self._claimed())

    @invariant()
    def peek_shows_everything(self) -> None:
        assert {m.id for m in self.store.peek(Q, limit=5000)} == set(self.model)


class FakeStoreMachine(StoreMachine):
    def make_store(self) -> QueueStore:
        return FakeStore(clock=self.clock)


TestStoreModel = StoreMachine.TestCase
TestStoreModel.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestFakeStoreModel = FakeStoreMachine.TestCase
TestFakeStoreModel.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
