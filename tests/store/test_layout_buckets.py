"""The bucket grammar of :mod:`spoolq.store.layout`: a standard bucket's ksec directory and slot,
the bucket a message file's name belongs to, and the bucket a delayed file goes to, each read the
way the ready counts (:mod:`spoolq.store.ready_counts`) read them, agreeing with the names the
store builds."""

from __future__ import annotations

import pytest

from spoolq.store import layout as L


@pytest.mark.parametrize("bucket", ["00000000000", "01764400000", "01764400999", "99999999999"])
def test_a_bucket_is_its_ksec_and_slot(bucket: str) -> None:
    k, slot = L.bucket_place(bucket)
    assert k == L.ksec(bucket) and slot == L.bucket_slot(bucket)
    assert 0 <= slot <= 999
    assert L.slot_bucket(k, slot) == bucket
    assert L.std_ready_path(bucket) == f"ready/{k}/{bucket}"


def test_only_the_buckets_of_a_ksec_directory_are_its_buckets() -> None:
    assert L.is_bucket_in("01764400123", "01764400")
    assert not L.is_bucket_in("01764401123", "01764400")  # another ksec's
    assert not L.is_bucket_in("0176440012", "01764400")  # too short
    assert not L.is_bucket_in("017644001234", "01764400")  # too long
    assert not L.is_bucket_in("0176440012x", "01764400")


def test_a_message_names_the_bucket_it_was_sent_in() -> None:
    ms = 1_764_400_123_456
    mid = L.IdFactory("node").new_id("q", ms)
    bucket = L.std_bucket(ms)
    for name in (L.new_ready_name(mid), L.ready_name(mid, 3, ms + 5),
                 L.claimed_name(mid, 1, ms, ms + 30_000, L.new_token()),
                 L.delayed_name(mid, 0, 0, ms + 60_000, bucket)):
        assert L.name_bucket(name) == bucket
    assert L.name_bucket("not-a-message-file") == ""


def test_a_delayed_file_names_the_bucket_it_goes_to() -> None:
    ms = 1_764_400_123_456
    mid = L.IdFactory("node").new_id("q", ms)
    for bucket in (L.std_bucket(ms - 86_400_000), L.fifo_bucket("group-a")):
        name = L.delayed_name(mid, 2, ms, ms + 60_000, bucket)
        assert L.delayed_bucket(name) == bucket
        parsed = L.parse_delayed(name)
        assert parsed is not None and parsed.bucket == bucket
