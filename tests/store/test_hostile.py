"""Invariant 7: bad input changes nothing and gets a clear error naming the problem.

Every call here is rejected. Each must raise exactly the expected SpoolqError subclass
with a short, printable message, and leave the root byte-for-byte as it was: a full
recursive listing (paths, kinds, sizes, inodes, content digests) is compared before and
after every single call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spoolq.errors import (
    InvalidArgument,
    InvalidMessageId,
    InvalidQueueName,
    MessageIdChecksumMismatch,
    MessageRefused,
    MessageTooLarge,
    QueueKindMismatch,
    SpoolqError,
)
from spoolq.store import DeadLetterPolicy, FileStore, OutgoingMessage, QueueConfig, QueueKind
from spoolq.store.model import MAX_BATCH, MAX_CLAIM_TTL, MAX_DELAY

from .helpers import tree, tree_diff

LIMIT = 1024  # max_message_bytes of the queue "good"

BAD_QUEUE_NAMES: list[Any] = [
    "a/b", "/abs", "../x", "x/..", "..", ".", "/", "a\x00b", "\x00", "x" * 10_000, "x" * 401,
    "quéue", "队列", "ü/../../etc", "", " ", "a b", "a\nb", "abc\n", "\n", "a\tb", "~x", "a~b", "q*", "q?",
    None, 42, 4.2, b"good", ["good"], ("g",),
]

M = OutgoingMessage


@dataclass
class Ctx:
    """A populated root and handles to real ids and receipts in it."""

    store: FileStore
    root: Path
    ready_id: str  # a ready message of "good"
    claimed_id: str  # a claimed message of "good"
    receipt: str  # its receipt
    other_id: str  # a message of "other" (checksum does not match "good")
    other_receipt: str


@pytest.fixture
def ctx(tmp_path: Path) -> Ctx:
    root = tmp_path / "root"
    store = FileStore(root, node_id="hostile", fsync=False)
    store.create_queue("good", config=QueueConfig(max_message_bytes=LIMIT))
    store.create_queue("other")
    store.create_queue("dd", QueueKind.DEDUP)
    store.create_queue("ff.fifo", QueueKind.FIFO, QueueConfig(content_based_dedup=True))
    store.send_batch("good", [M(body=b"one"), M(body=b"two")])
    store.send("good", M(body=b"later", delay=3600))
    claimed = store.poll("good", limit=1, claim_ttl=3600)[0]
    ready_id = next(m.id for m in store.peek("good", limit=10) if m.claimed_until is None)
    store.send("dd", M(body=b"d"))
    store.send("ff.fifo", M(body=b"f", group_id="g1"))
    while True:  # an id of "other" whose 16-bit checksum happens to fit "good" would be a valid id there
        store.send("other", M(body=b"o"))
        other = store.poll("other", limit=1, claim_ttl=3600)[0]
        try:
            store.ack("good", [other.message.id])
        except MessageIdChecksumMismatch:
            break
    return Ctx(store, root, ready_id, claimed.message.id, claimed.receipt, other.message.id, other.receipt)


def _check(c: Ctx, label: str, call: Callable[[], Any], exc: type[SpoolqError], needle: str = "") -> str | None:
    """Run one hostile call; describe what went wrong, or return None."""
    before = tree(c.root)
    try:
        result = call()
    except SpoolqError as e:
        problem = None
        if type(e) is not exc:
            problem = f"raised {type(e).__name__} ({e}), expected {exc.__name__}"
        else:
            text = str(e)
            if not text or len(text) > 300 or not text.isprintable():
                problem = f"unclear message {text[:400]!r}"
            elif needle and needle.lower() not in text.lower():
                problem = f"message {text!r} does not mention {needle!r}"
    except Exception as e:  # anything but a SpoolqError escaping is a bug (500 at a front door)
        problem = f"raised a bare {type(e).__name__}: {e}"
    else:
        problem = f"accepted (returned {result!r:.100}), expected {exc.__name__}"
    diff = tree_diff(before, tree(c.root))
    if diff:
        problem = (problem or "raised correctly") + f" but changed the root:\n{diff}"
    return f"{label}: {problem}" if problem else None


def _run(c: Ctx, cases: list[tuple[str, Callable[[], Any], type[SpoolqError], str]]) -> None:
    failures = [f for label, call, exc, needle in cases if (f := _check(c, label, call, exc, needle))]
    assert not failures, f"{len(failures)} of {len(cases)} hostile calls misbehaved:\n" + "\n".join(failures)


# ----------------------------------------------------------------------------- queue names


QUEUE_OPS: dict[str, Callable[[Ctx, Any], Any]] = {
    "create_queue": lambda c, n: c.store.create_queue(n),
    "create_queue(dead_letter)": lambda c, n: c.store.create_queue(
        "fresh", config=QueueConfig(dead_letter=DeadLetterPolicy(n, 3))),
    "send(create)": lambda c, n: c.store.send(n, M(body=b"x"), create=QueueKind.STANDARD),
    "send_batch(create)": lambda c, n: c.store.send_batch(n, [M(body=b"x")], create=QueueKind.STANDARD),
    "poll": lambda c, n: c.store.poll(n),
    "ack": lambda c, n: c.store.ack(n, [c.receipt]),
    "renew": lambda c, n: c.store.renew(n, [c.receipt], 10),
    "release": lambda c, n: c.store.release(n, [c.receipt]),
    "peek": lambda c, n: c.store.peek(n),
    "size": lambda c, n: c.store.size(n),
    "counts": lambda c, n: c.store.counts(n),
    "claim_count": lambda c, n: c.store.claim_count(n),
    "purge": lambda c, n: c.store.purge(n),
    "unclaim_all": lambda c, n: c.store.unclaim_all(n),
    "get_queue": lambda c, n: c.store.get_queue(n),
    "update_queue": lambda c, n: c.store.update_queue(n, tags={"a": "b"}),
    "delete_queue": lambda c, n: c.store.delete_queue(n),
    "move(from)": lambda c, n: c.store.move(n, "good"),
    "move(to)": lambda c, n: c.store.move("good", n),
}


@pytest.mark.parametrize("op", list(QUEUE_OPS))
def test_bad_queue_names_are_rejected_and_change_nothing(ctx: Ctx, op: str) -> None:
    call = QUEUE_OPS[op]
    _run(ctx, [(f"{op}({name!r:.40})", lambda n=name: call(ctx, n), InvalidQueueName, "queue name")
               for name in BAD_QUEUE_NAMES])


def test_long_names_are_legal_up_to_400_characters(ctx: Ctx) -> None:
    """The boundary: 400 characters work (a hashed directory name), 401 do not (above)."""
    name = "n" * 400
    ctx.store.send(name, M(body=b"long"), create=QueueKind.STANDARD)
    assert [m.body for m in ctx.store.peek(name)] == [b"long"]
    assert name in ctx.store.list_queues()


def test_list_queues_prefix_must_be_a_string(ctx: Ctx) -> None:
    _run(ctx, [(f"list_queues({p!r})", lambda p=p: ctx.store.list_queues(p), InvalidArgument, "prefix")
               for p in (None, 1, b"g")])


# ----------------------------------------------------------------------------- ids and receipts


def _bad_refs(c: Ctx) -> list[Any]:
    shard, _, claimed = c.receipt.partition(":")
    return [
        "", "abc", "0" * 39, "0" * 41, "g" * 40, c.ready_id.upper(), " " + c.ready_id[1:], c.ready_id[:-1] + "\n",
        c.ready_id + "\n", c.ready_id + "/", "0:../../x", "0:" + "../" * 10 + "etc/passwd", "../../../etc/passwd",
        f"{shard}:../{claimed}", f"{shard}:{claimed}/../../x", f"z:{claimed}", f"{shard}:{claimed}~00",
        f"{shard}:{claimed}\n", f"{shard}{claimed}", f"{shard}::{claimed}", f"{shard}:{claimed[:-1]}",
        c.receipt.replace("~", "/"), "\x00" * 40, None, 123, b"0" * 40, c.ready_id.encode(), [c.ready_id],
    ]


REF_OPS: dict[str, Callable[[Ctx, list[Any]], Any]] = {
    "ack": lambda c, refs: c.store.ack("good", refs),
    "renew": lambda c, refs: c.store.renew("good", refs, 60),
    "set_claim_ttl": lambda c, refs: c.store.set_claim_ttl("good", refs, 60),
    "claimed_until": lambda c, refs: c.store.claimed_until("good", refs),
    "nack": lambda c, refs: c.store.nack("good", refs),
    "release": lambda c, refs: c.store.release("good", refs),
}


@pytest.mark.parametrize("op", list(REF_OPS))
def test_malformed_ids_and_receipts_are_rejected_and_change_nothing(ctx: Ctx, op: str) -> None:
    call = REF_OPS[op]
    cases: list[tuple[str, Callable[[], Any], type[SpoolqError], str]] = []
    for ref in _bad_refs(ctx):
        cases.append((f"{op}([{ref!r:.60}])", lambda r=ref: call(ctx, [r]), InvalidMessageId, "ID"))
        # a valid ref first: nothing may be acted on before every ref is validated
        cases.append((f"{op}([valid, {ref!r:.60}])", lambda r=ref: call(ctx, [ctx.receipt, ctx.ready_id, r]),
                      InvalidMessageId, "ID"))
    for label, ref in (("id of another queue", ctx.other_id), ("receipt of another queue", ctx.other_receipt)):
        cases.append((f"{op}({label})", lambda r=ref: call(ctx, [r]), MessageIdChecksumMismatch, "checksum"))
        cases.append((f"{op}([valid, {label}])", lambda r=ref: call(ctx, [ctx.receipt, r]),
                      MessageIdChecksumMismatch, "checksum"))
    for refs in ("0" * 40, ctx.receipt, None, 5, b"0" * 40, {ctx.receipt}, iter([ctx.receipt])):
        cases.append((f"{op}(refs={refs!r:.60})", lambda r=refs: call(ctx, r), InvalidArgument, "refs"))
    _run(ctx, cases)


def test_well_formed_but_unknown_refs_answer_false_and_change_nothing(ctx: Ctx) -> None:
    shard, _, claimed = ctx.receipt.partition(":")
    wrong_shard = "0" if shard != "0" else "1"
    mid, rc, rest = claimed.split("~", 2)
    older = f"{shard}:{mid}~{int(rc) + 5}~{rest}"  # a delivery that never happened
    for refs in ([f"{wrong_shard}:{claimed}"], [older]):
        before = tree(ctx.root)
        assert ctx.store.ack("good", refs) == [False]
        assert ctx.store.renew("good", refs, 60) == [False]
        assert ctx.store.release("good", refs) == [False]
        assert tree_diff(before, tree(ctx.root)) == ""


# ----------------------------------------------------------------------------- payloads


def test_payload_at_the_limit_is_accepted_and_round_trips(ctx: Ctx) -> None:
    at_limit = bytes(range(256)) * (LIMIT // 256)
    assert len(at_limit) == LIMIT
    r = ctx.store.send("good", M(body=at_limit))
    batch = ctx.store.send_batch("good", [M(body=b""), M(body=at_limit)])
    bodies = {m.id: m.body for m in ctx.store.peek("good", limit=100)}
    assert bodies[r.id] == at_limit
    assert bodies[batch[0].id] == b""
    assert bodies[batch[1].id] == at_limit


def test_payloads_over_the_limit_are_rejected_and_change_nothing(ctx: Ctx) -> None:
    over = b"x" * (LIMIT + 1)
    big = b"x" * (1_048_576 + 1)
    ok = M(body=b"fine")
    _run(ctx, [
        ("send(limit+1)", lambda: ctx.store.send("good", M(body=over)), MessageTooLarge, str(LIMIT)),
        ("send(2*limit)", lambda: ctx.store.send("good", M(body=over * 2)), MessageTooLarge, str(LIMIT)),
        ("send_batch(one over, in the middle)",
         lambda: ctx.store.send_batch("good", [ok, ok, M(body=over), ok]), MessageTooLarge, str(LIMIT)),
        ("send_batch(last one over)", lambda: ctx.store.send_batch("good", [ok] * 50 + [M(body=over)]),
         MessageTooLarge, str(LIMIT)),
        ("send(default limit + 1)", lambda: ctx.store.send("other", M(body=big)), MessageTooLarge, "1048576"),
        ("send(create, over the default limit)",
         lambda: ctx.store.send("fresh", M(body=big), create=QueueKind.STANDARD), MessageTooLarge, "1048576"),
        ("send_batch(create, one over)",
         lambda: ctx.store.send_batch("fresh", [ok, M(body=big)], create=QueueKind.STANDARD), MessageTooLarge,
         "1048576"),
        ("send(dedup, over)", lambda: ctx.store.send("dd", M(body=big)), MessageTooLarge, "1048576"),
        ("send(fifo, over)", lambda: ctx.store.send("ff.fifo", M(body=big, group_id="g")), MessageTooLarge,
         "1048576"),
        ("send(str body)", lambda: ctx.store.send("good", M(body="text")), InvalidArgument, "bytes"),  # type: ignore[arg-type]
        ("send(None body)", lambda: ctx.store.send("good", M(body=None)), InvalidArgument, "bytes"),  # type: ignore[arg-type]
        ("send(memoryview body)", lambda: ctx.store.send("good", M(body=memoryview(b"x"))),  # type: ignore[arg-type]
         InvalidArgument, "bytes"),
        ("send(not a message)", lambda: ctx.store.send("good", b"raw"), InvalidArgument, "OutgoingMessage"),  # type: ignore[arg-type]
        ("send_batch(a dict inside)", lambda: ctx.store.send_batch("good", [ok, {"body": b"x"}]),  # type: ignore[list-item]
         InvalidArgument, "OutgoingMessage"),
        ("send_batch(not a sequence)", lambda: ctx.store.send_batch("good", b"xy"), InvalidArgument, "sequence"),  # type: ignore[arg-type]
        ("send_batch(generator)", lambda: ctx.store.send_batch("good", (m for m in [ok])), InvalidArgument,  # type: ignore[arg-type]
         "sequence"),
        ("send_batch(MAX_BATCH+1)", lambda: ctx.store.send_batch("good", [ok] * (MAX_BATCH + 1)), InvalidArgument,
         str(MAX_BATCH)),
        ("send(fifo, no group)", lambda: ctx.store.send("ff.fifo", ok), QueueKindMismatch, "group"),
        ("send(attributes not JSON)", lambda: ctx.store.send("good", M(body=b"x", attributes={"a": object()})),
         InvalidArgument, "JSON"),
        ("send(attributes not a mapping)", lambda: ctx.store.send("good", M(body=b"x", attributes=["a"])),  # type: ignore[arg-type]
         InvalidArgument, "mapping"),
        ("send(group_id empty)", lambda: ctx.store.send("good", M(body=b"x", group_id="")), MessageRefused,
         "group_id"),
        ("send(group_id 129)", lambda: ctx.store.send("good", M(body=b"x", group_id="g" * 129)),
         MessageRefused, "group_id"),
        ("send(group_id int)", lambda: ctx.store.send("good", M(body=b"x", group_id=5)), MessageRefused,  # type: ignore[arg-type]
         "group_id"),
        ("send(dedup_id 129)", lambda: ctx.store.send("ff.fifo", M(body=b"x", group_id="g", dedup_id="d" * 129)),
         MessageRefused, "dedup_id"),
    ])


# ----------------------------------------------------------------------------- numbers

NAN, INF = math.nan, math.inf


def _number_cases(c: Ctx) -> list[tuple[str, Callable[[], Any], type[SpoolqError], str]]:
    s = c.store
    cases: list[tuple[str, Callable[[], Any], type[SpoolqError], str]] = []

    def add(label: str, values: list[Any], fn: Callable[[Any], Any], needle: str) -> None:
        for v in values:
            cases.append((f"{label}={v!r:.30}", lambda v=v: fn(v), InvalidArgument, needle))

    add("poll limit", [0, -1, 1001, 10**30, 1.5, 10.0, True, False, NAN, INF, "10", None],
        lambda v: s.poll("good", limit=v), "limit")
    add("poll claim_ttl", [-1, -0.001, MAX_CLAIM_TTL + 1, 1e300, NAN, INF, -INF, True, "5"],
        lambda v: s.poll("good", claim_ttl=v), "claim_ttl")
    add("poll wait", [-1, 20.5, 1e9, NAN, INF, True, "1"], lambda v: s.poll("good", wait=v), "wait")
    add("renew ttl", [-1, MAX_CLAIM_TTL + 1, NAN, INF, True, "5", None],
        lambda v: s.renew("good", [c.receipt], v), "ttl")
    add("send delay", [-1, -0.5, MAX_DELAY + 1, 1e300, NAN, INF, True, "1"],
        lambda v: s.send("good", M(body=b"x", delay=v)), "delay")
    add("send ttl", [0, -1, NAN, INF, True, "1", 1e300], lambda v: s.send("good", M(body=b"x", ttl=v)), "ttl")
    add("send max_receives", [0, -1, 1.5, True, 10**7, "3"],
        lambda v: s.send("good", M(body=b"x", max_receives=v)), "max_receives")
    add("send_batch delay (last entry)", [-1, NAN],
        lambda v: s.send_batch("good", [M(body=b"a"), M(body=b"b", delay=v)]), "delay")
    add("peek limit", [0, -1, 5001, 1.5, True, NAN, None], lambda v: s.peek("good", limit=v), "limit")
    add("size limit", [0, -1, 1.5, True, NAN, "5"], lambda v: s.size("good", limit=v), "limit")
    add("counts limit", [0, -1, True], lambda v: s.counts("good", limit=v), "limit")
    add("move max_per_second", [0, -1, 1.5, True, 10**7], lambda v: s.move("good", "other", max_per_second=v),
        "max_per_second")
    cases.append(("move to itself", lambda: s.move("good", "good"), InvalidArgument, "itself"))
    return cases


def test_bad_numbers_are_rejected_and_change_nothing(ctx: Ctx) -> None:
    _run(ctx, _number_cases(ctx))


def test_bad_queue_configs_are_rejected_and_change_nothing(ctx: Ctx) -> None:
    s = ctx.store
    bad_configs: list[tuple[str, QueueConfig, str]] = [
        ("claim_ttl NaN", QueueConfig(claim_ttl=NAN), "claim_ttl"),
        ("claim_ttl -1", QueueConfig(claim_ttl=-1), "claim_ttl"),
        ("delay inf", QueueConfig(delay=INF), "delay"),
        ("retention 0", QueueConfig(retention=0), "retention"),
        ("max_message_bytes 0", QueueConfig(max_message_bytes=0), "max_message_bytes"),
        ("max_message_bytes 1.5", QueueConfig(max_message_bytes=1.5), "max_message_bytes"),  # type: ignore[arg-type]
        ("max_message_bytes True", QueueConfig(max_message_bytes=True), "max_message_bytes"),
        ("max_message_bytes 1e12", QueueConfig(max_message_bytes=10**12), "max_message_bytes"),
        ("receive_wait 21", QueueConfig(receive_wait=21), "receive_wait"),
        ("dead_letter max_receives 0", QueueConfig(dead_letter=DeadLetterPolicy("other", 0)), "max_receives"),
        ("extra not str", QueueConfig(extra={"k": 1}), "extra"),  # type: ignore[dict-item]
    ]
    cases: list[tuple[str, Callable[[], Any], type[SpoolqError], str]] = []
    for label, cfg, needle in bad_configs:
        cases.append((f"create_queue({label})", lambda cfg=cfg: s.create_queue("fresh", config=cfg),
                      InvalidArgument, needle))
        cases.append((f"update_queue({label})", lambda cfg=cfg: s.update_queue("good", config=cfg),
                      InvalidArgument, needle))
    cases += [
        ("create_queue(tags not str)", lambda: s.create_queue("fresh", tags={"a": 1}), InvalidArgument, "tags"),  # type: ignore[dict-item]
        ("update_queue(tags not str)", lambda: s.update_queue("good", tags={1: "a"}), InvalidArgument, "tags"),  # type: ignore[dict-item]
        ("create_queue(kind 'bogus')", lambda: s.create_queue("fresh", kind="bogus"), InvalidArgument, "bogus"),  # type: ignore[arg-type]
        ("send(create='bogus')", lambda: s.send("fresh", M(body=b"x"), create="bogus"), InvalidArgument,  # type: ignore[arg-type]
         "bogus"),
    ]
    _run(ctx, cases)
