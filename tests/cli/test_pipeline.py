"""``spoolq pipeline`` (spoolq-spark, through its ``spoolq.commands`` entry point): hands its arguments
to the pipelines unchanged, or says in one line what is wrong."""

from __future__ import annotations

import sys
import types

import pytest

pytest.importorskip("spoolq_spark", reason="spoolq-spark is not installed (SPOOLQ_NO_SPARK)")

from spoolq.cli import main


def test_pipeline_with_a_broken_spoolq_spark_says_what_to_reinstall(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "spoolq_spark.pipelines.main", None)  # import fails as if absent
    assert main(["pipeline", "audit", "/data", "--out", "/tmp/x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "spoolq pipeline: spoolq-spark cannot load" in err and "reinstall" in err


def test_pipeline_arguments_pass_through_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("spoolq_spark.pipelines.main")
    fake.main = lambda argv, prog: seen.append(list(argv)) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "spoolq_spark.pipelines.main", fake)
    assert main(["pipeline", "--master", "local[2]", "requeue", "a", "b", "--where", "x = 1"]) == 0
    assert seen == [["--master", "local[2]", "requeue", "a", "b", "--where", "x = 1"]]


def test_pipeline_help_lists_the_pipelines_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["pipeline", "--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: spoolq pipeline") and "audit" in out and "examples:" in out


def test_pipeline_without_java_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert main(["pipeline", "audit", "/data", "--out", "/tmp/x"]) == 2
    assert capsys.readouterr().err == ("spoolq pipeline: Spark runs on a Java runtime and none was found: install "
                                       "Java 17 or later (java on PATH, or JAVA_HOME)\n")
