"""App-level behaviour: auth config, listen policy, health, metrics, docs, unknown routes, 500 rendering."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask.testing import FlaskClient

from spoolq.access.auth import Authenticator, Permission, check_listen_policy, hash_key
from spoolq.http.app import create_app
from spoolq.settings.server import Settings, SettingsError
from tests.http.fakes import FakeStore


@pytest.mark.parametrize(("perm", "wanted", "ok"), [
    ("queue|*|*", ("queue", "post", "a"), True),
    ("queue", ("queue", "poll", "a"), True),
    ("queue|post|a", ("queue", "poll", "a"), False),
    ("queue|post,poll|orders-*", ("queue", "poll", "orders-1"), True),
    ("queue|post|orders-*", ("queue", "post", "other"), False),
    ("queue|get_status|a?c", ("queue", "get_status", "abc"), True),
    ("queue|get_status|a?c", ("queue", "get_status", "ac"), False),
    ("*", ("queue", "post", "x"), True),
])
def test_permissions(perm: str, wanted: tuple[str, str, str], ok: bool) -> None:
    assert Permission.parse(perm).implies(wanted) is ok


def test_config_keys_hashed_and_anonymous() -> None:
    auth = Authenticator.from_config({
        "api_keys": [{"name": "a", "sha256": hash_key("secret"), "permissions": ["queue|poll|*"]}],
        "anonymous": {"permissions": ["queue|get_status|*"]},
    })
    who = auth.principal("secret", None)
    assert who is not None and who.can("poll", "x") and not who.can("post", "x")
    assert auth.principal(None, "secret") is who
    anon = auth.principal(None, None)
    assert anon is not None and anon.can("get_status", "x") and not anon.can("poll", "x")
    assert auth.principal("wrong", None) is None
    assert "secret" not in repr(auth.__dict__)


@pytest.mark.parametrize("bad", [{"api_keys": {}}, {"api_keys": [{"name": "x"}]},
                                 {"api_keys": [{"sha256": "zz"}]}, {"api_keys": [{"key": "k", "permissions": "x"}]}])
def test_bad_config(bad: dict[str, object]) -> None:
    with pytest.raises(SettingsError):
        Authenticator.from_config(bad)


def test_listen_policy(tmp_path: Path) -> None:
    open_auth = Authenticator(None)
    check_listen_policy(Settings(host="127.0.0.1", node_id="n"), open_auth)
    check_listen_policy(Settings(host="::1", node_id="n"), open_auth)
    with pytest.raises(SettingsError, match="allow-open"):
        check_listen_policy(Settings(host="0.0.0.0", node_id="n"), open_auth)
    check_listen_policy(Settings(host="0.0.0.0", allow_open=True, node_id="n"), open_auth)
    check_listen_policy(Settings(host="0.0.0.0", node_id="n"), Authenticator({}))


def test_health_metrics_docs(client: FlaskClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json["status"] == "ok"
    client.post("/queue/1/m/send", data=b"1", headers={"Content-Type": "application/json"})
    text = client.get("/metrics").data.decode()
    assert 'spoolq_http_requests_total{door="queue",operation="send",status="200"} 1.0' in text
    assert 'spoolq_messages_total{door="queue",operation="send"} 1.0' in text
    assert client.get("/docs/").status_code == 200
    assert client.get("/docs/openapi.json").json["openapi"] == "3.0.3"
    assert client.get("/docs/assets/swagger-ui-bundle.js").status_code == 200


def test_unknown_routes_are_json_not_html(client: FlaskClient) -> None:
    for method, path in (("GET", "/nope"), ("GET", "/queue/1"), ("PUT", "/queue/1/t/send"), ("GET", "/mq"),
                         ("POST", "/queue/1"), ("POST", "/mq/x"), ("POST", "/dedupq/1"), ("POST", "/a/b")):
        r = client.open(path, method=method)
        assert r.status_code in (404, 405) and b"<html" not in r.data.lower()


def test_unexpected_error_is_emodb_500_with_log_id(caplog: pytest.LogCaptureFixture) -> None:
    store = FakeStore()
    store.fail_with = RuntimeError("boom")
    c = create_app(Settings(node_id="t"), store=store).test_client()
    r = c.get("/queue/1/t/peek")
    assert r.status_code == 500 and r.json["message"].startswith("There was an error processing your request.")
    assert "boom" not in r.get_data(as_text=True)
    r = c.get("/mq/t/messages")
    assert r.status_code == 500 and r.mimetype == "text/plain"


def test_open_mode_without_config() -> None:
    c = create_app(Settings(node_id="t"), store=FakeStore()).test_client()
    assert c.get("/queue/1/t/size").data == b"0"


def test_extensions_send_delay_and_poll_wait(client: FlaskClient) -> None:
    J = {"Content-Type": "application/json"}
    assert client.post("/queue/1/ext/send?delay=60", data=b'"later"', headers=J).status_code == 200
    assert client.get("/queue/1/ext/poll?wait=0.2").json == []
    assert client.post("/queue/1/ext/send?atMostOnce=true&ttl=60", data=b'"once"', headers=J).status_code == 200
    [m] = client.get("/queue/1/ext/poll").json
    assert m["payload"] == "once"
