"""Fixtures of the ``spark`` tier: one local SparkSession and one real gunicorn spoolq per session.

Skipped (with the reason) when pyspark, pyarrow or a Java runtime is missing. Python workers run
this interpreter (``PYSPARK_PYTHON``), so they import the connector from the checkout's venv.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.spoolq_server import KEY_ALL, Server, running_server

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e clients/spark)")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e clients/spark)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime (Spark needs Java 17+)", allow_module_level=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from spoolq_spark import SpoolqDataSource

    session = (SparkSession.builder.master("local[2]").appName("spoolq-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(SpoolqDataSource)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("spoolq-spark"), workers=2, threads=16) as srv:
        yield srv


@pytest.fixture
def queue() -> str:
    return f"spark-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client(server: Server) -> Iterator[Any]:
    from spoolq_client import SpoolqClient

    with SpoolqClient(server.url, KEY_ALL) as c:
        yield c


def opts(server: Server, queue: str, **extra: Any) -> dict[str, str]:
    out = {"url": server.url, "queue": queue, "apiKey": KEY_ALL}
    out.update({k: str(v) for k, v in extra.items()})
    return out

