"""``spoolq pipeline``: hands its arguments to spoolq-spark, or says what to install."""

from __future__ import annotations

import sys
import types

import pytest

from spoolq.cli import main


def test_pipeline_without_spoolq_spark_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "spoolq_spark.pipelines.main", None)  # import fails as if absent
    assert main(["pipeline", "audit", "/data", "--out", "/tmp/x"]) == 2
    err = capsys.readouterr().err
    assert "spoolq pipeline needs the spoolq-spark package with pyspark and pyarrow" in err


def test_pipeline_arguments_pass_through_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("spoolq_spark.pipelines.main")
    fake.main = lambda argv: seen.append(list(argv)) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "spoolq_spark.pipelines.main", fake)
    assert main(["pipeline", "--master", "local[2]", "requeue", "a", "b", "--where", "x = 1"]) == 0
    assert seen == [["--master", "local[2]", "requeue", "a", "b", "--where", "x = 1"]]
