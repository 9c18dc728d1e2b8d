"""Option parsing of the ``spoolq`` data source (no SparkSession needed)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from spoolq_spark.options import DEFAULT_URL, OptionError, check_common, parse

pytestmark = pytest.mark.spark


def test_defaults_and_case_insensitive_names() -> None:
    o = parse({"QUEUE": "q", "claimttl": "60", "SpoolDir": "/s"}, "stream", environ={})  # spoolDir: accepted, unused
    assert (o.url, o.queue, o.claim_ttl, o.renew_interval, o.max_per_batch) == (DEFAULT_URL, "q", 60, 20.0, 10_000)
    assert parse({"queue": "q", "maxMessagesPerTrigger": "7", "maxBytesPerTrigger": "100"}, "stream").max_per_batch == 7
    assert parse({"queue": "q", "maxMessagesPerBatch": "8"}, "stream").max_per_batch == 8
    assert parse({"queue": "q", "dedup": "TRUE"}, "write").door == "/dedupq/1"


@pytest.mark.parametrize(("options", "mode", "text"), [
    ({}, "write", "option 'queue' is required"),
    ({"queue": "q", "maxmessagespertrigger": "5", "maxmessagesperbatch": "6"}, "stream", "not both"),
    ({"queue": "q", "partitionsize": "10001"}, "stream", "'partitionSize' must be between 1 and 10000"),
    ({"queue": "q", "maxbytespertrigger": "0"}, "stream", "'maxBytesPerTrigger' must be between"),
    ({"queue": "q", "spooldir": "/s", "claimttl": "0"}, "stream", "'claimTtl' must be between 1 and 3600"),
    ({"queue": "q", "spooldir": "/s", "claimttl": "30", "renewinterval": "30"}, "stream", "'renewInterval'"),
    ({"queue": "q", "batchsize": "x"}, "write", "'batchSize' must be an integer"),
    ({"queue": "q", "batchsize": "5"}, "stream", "'batchSize' does not apply to stream"),
    ({"queue": "q", "url": "ftp://x"}, "write", "'url' must be an http"),
    ({"queue": "q", "dedup": "yes"}, "read", "'dedup' must be 'true' or 'false'"),
    ({"queue": "q", "limit": "6000"}, "read", "'limit' must be between 1 and 5000"),
    ({"queue": "a/b"}, "read", "'queue' must be a queue name"),
    ({"queue": "q", "bogus": "1"}, "write", "unknown option 'bogus'"),
])
def test_bad_options_are_named(options: dict[str, str], mode: str, text: str) -> None:
    with pytest.raises(OptionError, match=text):
        parse(options, mode)


def test_check_common() -> None:
    check_common({"queue": "q", "spooldir": "/s", "batchsize": "3"})  # mode-specific ones are checked later
    with pytest.raises(OptionError, match="unknown option 'nope'"):
        check_common({"queue": "q", "nope": "1"})
    with pytest.raises(OptionError, match="'queue' is required"):
        check_common({"url": "http://h"})
    with pytest.raises(OptionError, match="'claimTtl' must be between"):  # values of any mode's options
        check_common({"queue": "q", "claimttl": "0"})


def test_url_and_api_key_default_to_the_environment_as_in_the_cli() -> None:
    env = {"SPOOLQ_URL": "http://spoolq.internal:9000/", "SPOOLQ_API_KEY": "k1"}
    o = parse({"queue": "q"}, "write", environ=env)
    assert (o.url, o.api_key) == ("http://spoolq.internal:9000", "k1")
    given = parse({"queue": "q", "URL": "http://other:1", "apikey": "k2"}, "write", environ=env)
    assert (given.url, given.api_key) == ("http://other:1", "k2")  # options win


def test_a_bad_spoolq_url_is_named_unless_the_option_overrides_it() -> None:
    with pytest.raises(OptionError, match="SPOOLQ_URL must be an http"):
        parse({"queue": "q"}, "read", environ={"SPOOLQ_URL": "127.0.0.1:8480"})
    assert parse({"queue": "q", "url": "http://h:1"}, "read", environ={"SPOOLQ_URL": "nonsense"}).url == "http://h:1"


def test_a_batch_is_planned_in_partitions_of_partition_size() -> None:
    from spoolq_spark.stream import plan

    o = parse({"queue": "q", "partitionSize": "1000", "maxBytesPerTrigger": "1000000"}, "stream", environ={})
    assert plan(o, 10_000) == (10, 1000, 100_000)
    assert plan(o, 1) == (1, 1, 1_000_000)
    assert plan(parse({"queue": "q", "minPartitions": "4"}, "stream", environ={}), 10) == (4, 3, 0)
