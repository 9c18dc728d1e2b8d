"""A poll that outlasts its claims: a message claimed early in the poll, put back by another
process's maintenance when its short claim ran out, and claimed again by the same poll, is in the
answer once, under its new claim. It used to be taken for a second copy of the message (a raw copy
of a live root) and its new claim dropped, while the earlier claim was gone: the message was lost
(2 of a batch of 4 in the mixed-load send test, on a busy machine)."""

from __future__ import annotations

from spoolq.store import FileStore, OutgoingMessage
from tests.inside import catalog_of, claiming_of, root_of


def _claimed(store: FileStore, queue: str) -> list[str]:
    return sorted(p.name for p in (root_of(store) / "queues" / queue / "claimed").rglob("*") if p.is_file())


def test_a_message_claimed_again_in_one_poll_keeps_its_new_claim(store: FileStore) -> None:
    store.create_queue("q")
    store.send("q", OutgoingMessage(body=b"once"))
    (first,) = store.poll("q", limit=1, claim_ttl=30)
    assert store.release("q", [first.receipt]) == [True]  # its claim ended: back to ready
    (again,) = store.poll("q", limit=1, claim_ttl=30)  # and claimed again (within the same poll, in life)
    assert again.message.id == first.message.id and again.receipt != first.receipt
    q = catalog_of(store).find("q")
    assert q is not None
    out = [first]
    claiming_of(store)._add_once(q, out, again, {first.message.id})
    assert out == [again]
    assert _claimed(store, "q") == [again.receipt.partition(":")[2]]
    assert store.ack("q", [again.receipt]) == [True]
    assert store.size("q") == 0 and _claimed(store, "q") == []


def test_a_second_copy_of_a_message_is_still_dropped(store: FileStore) -> None:
    """Both claims live (a raw copy put in place): the answer keeps the first, the second goes."""
    store.create_queue("q")
    store.send("q", OutgoingMessage(body=b"twice"))
    (first,) = store.poll("q", limit=1, claim_ttl=30)
    shard, _, cname = first.receipt.partition(":")
    claimed_dir = root_of(store) / "queues" / "q" / "claimed" / shard
    copy = claimed_dir / cname.replace(cname[-4:], "copy")
    copy.write_bytes((claimed_dir / cname).read_bytes())
    q = catalog_of(store).find("q")
    assert q is not None
    second = type(first)(first.message, f"{shard}:{copy.name}", first.claimed_until)
    out = [first]
    claiming_of(store)._add_once(q, out, second, {first.message.id})
    assert out == [first]
    assert not copy.exists()  # the second copy went to the trash
