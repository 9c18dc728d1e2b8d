"""Arguments of ``spoolq pipeline replay`` refused before Spark starts (no SparkSession here)."""

from __future__ import annotations

import pytest

from spoolq_spark.pipelines.main import main
from spoolq_spark.pipelines.replay import parse_time


@pytest.mark.parametrize(("argv", "text"), [
    (["replay", "/data", "t", "--since", "yesterday"], "--since: not a time: 'yesterday'"),
    (["replay", "/data", "t", "--until", "2026-13-01"], "--until: not a time"),
    (["replay", "/data", "t", "--batch", "0"], "--batch must be between 1 and 10000"),
])
def test_bad_replay_arguments_are_named(argv: list[str], text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert text in capsys.readouterr().err


def test_times_are_epoch_seconds_or_iso_8601_in_utc_unless_zoned() -> None:
    assert parse_time("1790000000.5") == 1_790_000_000.5
    assert parse_time("2026-09-21T10:00") == 1_789_984_800.0
    assert parse_time("2026-09-21T12:00+02:00") == parse_time("2026-09-21T10:00")
