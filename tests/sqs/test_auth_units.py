"""SigV4 and the one authorization model, through the Flask app (real FileStore, botocore's signer)."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from flask.testing import FlaskClient

from spoolq.access.auth import OPEN, Authenticator, Permission, Principal, check_listen_policy, may_send_into
from spoolq.cli import main
from spoolq.http.app import create_app
from spoolq.http.sqs import sigv4
from spoolq.http.sqs.moves import task_id
from spoolq.settings.server import Settings, SettingsError
from spoolq.store import FileStore
from tests.conftest import tree

ACCOUNT = "123456789012"
KEYS_ONLY = """
api_keys:
  - name: all
    key: k-all
    permissions: ["queue|*|*"]
"""
IDENTITIES = """
api_keys:
  - name: admin
    key: k-admin
    sqs_credentials: [{access_key_id: AKIDADMIN, secret_access_key: admin-secret}]
    permissions: ["queue|*|*"]
  - name: worker
    sqs_credentials: [{access_key_id: AKIDWORKER, secret_access_key: worker-secret}]
    permissions: ["queue|post,poll,get_status|*"]
"""
LEGACY = "sqs_credentials:\n  AKIDLEGACY: legacy-secret\n"


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Any]:
    stores: list[FileStore] = []

    def make(config_text: str | None) -> tuple[FlaskClient, Path]:
        root = tmp_path / f"root{len(stores)}"
        config = None
        if config_text is not None:
            config = tmp_path / f"c{len(stores)}.yaml"
            config.write_text(config_text, encoding="utf-8")
        store = FileStore(root, node_id="t", fsync=False)
        stores.append(store)
        app = create_app(Settings(root=root, config=config, node_id="t"), store=store)
        return app.test_client(), root

    yield make
    for s in stores:
        s.close()


def _signed(action: str, body: dict[str, Any], key: str, secret: str, *, date: str | None = None,
            query: bool = False) -> tuple[bytes, dict[str, str]]:
    if query:
        from urllib.parse import urlencode

        data = urlencode({"Action": action, **body}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
    else:
        data = json.dumps(body).encode()
        headers = {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"}
    if date is not None:
        headers["X-Amz-Date"] = date
    req = AWSRequest("POST", "http://localhost/", data=data, headers=headers)
    if date is None:
        SigV4Auth(Credentials(key, secret), "sqs", "us-east-1").add_auth(req)
    else:  # sign "at" another time: botocore keeps a preset X-Amz-Date only via its timestamp
        auth = SigV4Auth(Credentials(key, secret), "sqs", "us-east-1")
        req.context["timestamp"] = date
        auth._modify_request_before_signing(req)
        req.headers.replace_header("X-Amz-Date", date)
        canonical = auth.canonical_request(req)
        string_to_sign = auth.string_to_sign(req, canonical)
        signature = auth.signature(string_to_sign, req)
        auth._inject_signature_to_request(req, signature)
    return data, dict(req.headers.items())


def _error(reply: Any) -> str:
    if reply.mimetype == "text/xml":
        return str(reply.data.decode().split("<Code>", 1)[1].split("</Code>", 1)[0])
    return str(json.loads(reply.data)["__type"].rsplit("#", 1)[-1])


@pytest.mark.parametrize("query", [False, True])
def test_api_keys_without_sigv4_credentials_close_the_sqs_door(make_client: Any, query: bool) -> None:
    client, root = make_client(KEYS_ONLY)
    before = tree(root)
    for action, body in (("ListQueues", {}), ("CreateQueue", {"QueueName": "q"}),
                         ("SendMessage", {"QueueUrl": f"/{ACCOUNT}/q", "MessageBody": "x"})):
        if query:
            from urllib.parse import urlencode

            reply = client.post("/", data=urlencode({"Action": action, **body}),
                                content_type="application/x-www-form-urlencoded")
        else:
            reply = client.post("/", data=json.dumps(body), headers={"X-Amz-Target": f"AmazonSQS.{action}",
                                                                     "Content-Type": "application/x-amz-json-1.0"})
        assert reply.status_code == 403, (action, reply.data)
        assert _error(reply) == "MissingAuthenticationToken"
        assert reply.headers["x-amzn-query-error"] == "MissingAuthenticationToken;Sender"
    assert tree(root) == before


def test_signature_binds_the_body(make_client: Any) -> None:
    client, root = make_client(LEGACY)
    data, headers = _signed("CreateQueue", {"QueueName": "bound"}, "AKIDLEGACY", "legacy-secret")
    assert client.post("/", data=data, headers=headers).status_code == 200
    before = tree(root)
    signed_body, headers = _signed("ListQueues", {}, "AKIDLEGACY", "legacy-secret")
    other = json.dumps({"QueueName": "evil"}).encode()
    for extra in ({}, {"X-Amz-Content-SHA256": hashlib.sha256(signed_body).hexdigest()},
                  {"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}):
        reply = client.post("/", data=other, headers={**headers, **extra, "X-Amz-Target": "AmazonSQS.CreateQueue"})
        assert reply.status_code == 403 and _error(reply) == "SignatureDoesNotMatch", extra
    # a captured PurgeQueue/ReceiveMessage replayed with another body and the old body's hash
    body, headers = _signed("ReceiveMessage", {"QueueUrl": f"/{ACCOUNT}/bound"}, "AKIDLEGACY", "legacy-secret")
    headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    reply = client.post("/", data=json.dumps({"QueueUrl": f"/{ACCOUNT}/bound", "MaxNumberOfMessages": 10}),
                        headers=headers)
    assert reply.status_code == 403 and _error(reply) == "SignatureDoesNotMatch"
    # the declared hash of the right body is accepted
    body, headers = _signed("ListQueues", {}, "AKIDLEGACY", "legacy-secret")
    headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    assert client.post("/", data=body, headers=headers).status_code == 200
    assert tree(root) == before


@pytest.mark.parametrize("skew", [-16 * 60, 16 * 60])
def test_dates_outside_15_minutes_are_refused(make_client: Any, skew: int) -> None:
    client, _ = make_client(LEGACY)
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() + skew))
    data, headers = _signed("ListQueues", {}, "AKIDLEGACY", "legacy-secret", date=date)
    reply = client.post("/", data=data, headers=headers)
    assert reply.status_code == 403 and _error(reply) == "RequestExpired"
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() + skew / 2))
    data, headers = _signed("ListQueues", {}, "AKIDLEGACY", "legacy-secret", date=date)
    assert client.post("/", data=data, headers=headers).status_code == 200


def test_unknown_key_wrong_secret_and_unsigned_host(make_client: Any) -> None:
    client, _ = make_client(IDENTITIES)
    for key, secret, code in (("AKIDNOBODY", "x", "InvalidClientTokenId"),
                              ("AKIDADMIN", "worker-secret", "SignatureDoesNotMatch")):
        data, headers = _signed("ListQueues", {}, key, secret, query=True)
        reply = client.post("/", data=data, headers=headers)
        assert reply.status_code == 403 and reply.mimetype == "text/xml" and _error(reply) == code


def _create(client: FlaskClient, key: str, secret: str, name: str, **attributes: str) -> Any:
    data, headers = _signed("CreateQueue", {"QueueName": name, "Attributes": attributes}, key, secret)
    return client.post("/", data=data, headers=headers)


def test_move_tasks_are_sqs_only_and_admin_only(make_client: Any, tmp_path: Path) -> None:
    client, _ = make_client(IDENTITIES)
    assert _create(client, "AKIDADMIN", "admin-secret", "dlq").status_code == 200
    policy = json.dumps({"deadLetterTargetArn": f"arn:aws:sqs:us-east-1:{ACCOUNT}:dlq", "maxReceiveCount": 1})
    assert _create(client, "AKIDADMIN", "admin-secret", "src", RedrivePolicy=policy).status_code == 200
    for _ in range(5):
        data, headers = _signed("SendMessage", {"QueueUrl": f"/{ACCOUNT}/dlq", "MessageBody": "m"},
                                "AKIDWORKER", "worker-secret")
        assert client.post("/", data=data, headers=headers).status_code == 200
    start = {"SourceArn": f"arn:aws:sqs:us-east-1:{ACCOUNT}:dlq", "MaxNumberOfMessagesPerSecond": 1}
    data, headers = _signed("StartMessageMoveTask", start, "AKIDWORKER", "worker-secret")
    reply = client.post("/", data=data, headers=headers)
    assert reply.status_code == 403 and _error(reply) == "AccessDeniedException"
    data, headers = _signed("StartMessageMoveTask", start, "AKIDADMIN", "admin-secret")
    reply = client.post("/", data=data, headers=headers)
    assert reply.status_code == 200, reply.data
    handle = json.loads(reply.data)["TaskHandle"]
    # the EmoDB door does not move SQS queues, so it cannot start a move an SQS handle could name
    reply = client.post(f"/queue/1/_move?from=sqs:{ACCOUNT}:us-east-1:dlq&to=plain",
                        headers={"X-BV-API-Key": "k-admin"})
    assert reply.status_code == 400, reply.data
    # an EmoDB move's ref wrapped as a task handle (AWS's format) is not a task
    reply = client.post("/queue/1/_move?from=emo-a&to=emo-b", headers={"X-BV-API-Key": "k-admin"})
    assert reply.status_code == 200, reply.data
    emo_ref = json.loads(reply.data)["id"]
    for src in (f"arn:aws:sqs:us-east-1:{ACCOUNT}:dlq", "arn:aws:sqs:::emo-a"):
        for task in (emo_ref, task_id(emo_ref)):
            forged = base64.b64encode(json.dumps({"taskId": task, "sourceArn": src}).encode()).decode()
            data, headers = _signed("CancelMessageMoveTask", {"TaskHandle": forged}, "AKIDADMIN", "admin-secret")
            reply = client.post("/", data=data, headers=headers)
            assert reply.status_code == 404 and _error(reply) == "ResourceNotFoundException", reply.data
    # only an admin of the source queue cancels the SQS task
    data, headers = _signed("CancelMessageMoveTask", {"TaskHandle": handle}, "AKIDWORKER", "worker-secret")
    reply = client.post("/", data=data, headers=headers)
    assert reply.status_code == 403 and _error(reply) == "AccessDeniedException"
    data, headers = _signed("CancelMessageMoveTask", {"TaskHandle": handle}, "AKIDADMIN", "admin-secret")
    assert client.post("/", data=data, headers=headers).status_code == 200


@pytest.mark.parametrize(("text", "message"), [
    ("api_keys:\n  - name: x\n    permissions: []\n", "needs sha256 (or key), sqs_credentials, or both"),
    ("api_keys:\n  - name: x\n    sqs_credentials: {AKID: s}\n", "must be a list"),
    ("api_keys:\n  - name: x\n    sqs_credentials: [{access_key_id: AKID}]\n",
     "exactly access_key_id and secret_access_key"),
    ("api_keys:\n  - sqs_credentials: [{access_key_id: A/B, secret_access_key: s}]\n", "access_key_id must be"),
    ("api_keys:\n  - sqs_credentials: [{access_key_id: A, secret_access_key: s}]\n"
     "  - sqs_credentials: [{access_key_id: A, secret_access_key: t}]\n", "configured twice"),
    ("api_keys:\n  - key: k\n    sqs: []\n", "unknown key 'sqs'"),
    ("sqs_credentials: [AKID]\n", "must map access key ids to secrets"),
])
def test_bad_config_is_a_clear_startup_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                             message: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match="config"):
        Authenticator.from_settings(Settings(root=tmp_path, config=config))
    assert main(["serve", "--root", str(tmp_path / "r"), "--config", str(config), "--port", "1"]) == 2
    assert message in capsys.readouterr().err


def test_open_mode_rule(tmp_path: Path) -> None:
    def policy(text: str | None, host: str = "0.0.0.0") -> None:
        config = None
        if text is not None:
            config = tmp_path / "p.yaml"
            config.write_text(text, encoding="utf-8")
        settings = Settings(root=tmp_path, config=config, host=host)
        check_listen_policy(settings, Authenticator.from_settings(settings))

    with pytest.raises(SettingsError, match="without credentials"):
        policy(None)
    with pytest.raises(SettingsError):
        policy("anonymous: {permissions: ['queue']}\n")
    policy(None, host="127.0.0.1")
    policy(KEYS_ONLY)  # SQS then refuses every request: no door is open
    policy(LEGACY)  # EmoDB/MQ then need a key: no door is open


def test_legacy_sqs_credentials_keep_working_and_close_the_other_doors(make_client: Any) -> None:
    client, _ = make_client(LEGACY)
    data, headers = _signed("CreateQueue", {"QueueName": "legacy"}, "AKIDLEGACY", "legacy-secret")
    assert client.post("/", data=data, headers=headers).status_code == 200
    assert client.get("/queue/1/legacy/size").status_code == 403
    assert client.get(f"/queue/1/sqs:{ACCOUNT}:us-east-1:legacy/size").status_code == 403


def test_verify_is_off_only_in_open_mode() -> None:
    assert Authenticator(None).open
    assert not Authenticator({}).open
    assert sigv4.MAX_SKEW == 15 * 60


def test_permission_answers_are_kept_per_identity_and_bounded() -> None:
    """``Principal.can`` keeps its answers (the same ones matching gives) and never more than a bound."""
    from spoolq.access import auth as auth_mod
    from spoolq.access.auth import Permission, Principal

    perms = (Permission.parse("queue|poll,get_status|sqs:*:*:orders"), Permission.parse("queue|post|orders-*"))
    kept = Principal("kept", perms)
    fresh = Principal("fresh", perms)
    names = ["orders", "orders-1", "orders-x", "sqs:1:r:orders", "sqs:1:r:orders-2", "other", "ORDERS-1"]
    for _ in range(2):
        for action in ("post", "poll", "get_status", "admin"):
            for name in names:
                want = any(p.implies(("queue", action, name)) for p in fresh.permissions)
                assert kept.can(action, name) is want
    for i in range(auth_mod._DECIDED_MAX + 10):
        assert kept.can("post", f"orders-{i}") and not kept.can("poll", f"orders-{i}")
    assert len(kept._decided) <= auth_mod._DECIDED_MAX
    assert kept == Principal("kept", perms)  # the kept answers are not part of the identity


def test_a_second_queue_needs_post_on_it_as_each_door_names_it() -> None:
    """``may_send_into`` reads a store name the way permissions name its queue at its door."""
    team = Principal("team", (Permission.parse("queue|post|jobs-*"), Permission.parse("queue|*|sqs:*:*:jobs-*"),
                              Permission.parse("queue|poll|other")))
    for store_name in ("jobs-a", "__dedupq:jobs-a", "mq:jobs-a", "disque:jobs-a", f"sqs:{ACCOUNT}:us-east-1:jobs-a"):
        assert may_send_into(team, store_name), store_name
    for store_name in ("other", "__dedupq:other", "mq:other", f"sqs:{ACCOUNT}:us-east-1:other", "sqs:x"):
        assert not may_send_into(team, store_name), store_name
    assert may_send_into(None, "anything") and may_send_into(OPEN, "anything")
