"""The connector's HTTP retries (no SparkSession): Retry-After honoured, refusals raised at once."""

from __future__ import annotations

import time

import httpx
import pytest

pytest.importorskip("pyspark")

from spoolq_spark.http import Api, SpoolqError
from spoolq_spark.options import parse

pytestmark = pytest.mark.spark


def api_with(handler: object, retry_timeout: str = "5") -> tuple[Api, list[float]]:
    seen: list[float] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(time.monotonic())
        return handler(request)  # type: ignore[operator, no-any-return]

    api = Api(parse({"queue": "q", "retrytimeout": retry_timeout}, "write"))
    api._client = httpx.Client(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(record))
    return api, seen


def test_retry_after_is_honoured_then_the_send_succeeds() -> None:
    answers = [httpx.Response(503, headers={"Retry-After": "0.3"}, json={"message": "busy"}),
               httpx.Response(200, json={"success": True})]
    api, seen = api_with(lambda request: answers.pop(0))
    api.send_batch([b'{"a":1}'])
    assert len(seen) == 2 and seen[1] - seen[0] >= 0.3


def test_a_refusal_is_raised_at_once_with_the_service_message() -> None:
    api, seen = api_with(lambda request: httpx.Response(403, json={"message": "not authorized"}))
    with pytest.raises(SpoolqError, match="HTTP 403: not authorized") as e:
        api.send_batch([b"1"])
    assert e.value.status == 403 and len(seen) == 1


def test_retries_stop_at_the_retry_timeout() -> None:
    api, seen = api_with(lambda request: httpx.Response(503, headers={"Retry-After": "0.4"}), retry_timeout="1")
    started = time.monotonic()
    with pytest.raises(SpoolqError, match="gave up after 3 attempts"):
        api.send_batch([b"1"])
    assert time.monotonic() - started < 1.5 and len(seen) == 3


def test_api_pickles_without_its_connection() -> None:
    import pickle

    api, _ = api_with(lambda request: httpx.Response(200))
    copy = pickle.loads(pickle.dumps(api))
    assert copy._client is None and copy.opts == api.opts
