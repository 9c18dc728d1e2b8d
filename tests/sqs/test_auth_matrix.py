"""One authorization model across every door, through a real gunicorn with real clients.

The matrix: door (EmoDB, MQ, SQS JSON via boto3, SQS Query signed by botocore's SigV4 signer)
x operation x identity (none, wrong secret, read-only, poster, admin). Every cell is checked
against the permission the operation needs, and every refused request leaves the data
directory byte-for-byte unchanged. ``SPOOLQ_AUTH_MATRIX=path`` writes the observed matrix
as a Markdown table.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.conftest import tree
from tests.e2e.spoolq_server import Server, running_server
from tests.sqs.harness import ACCOUNT, REGION, client

pytestmark = pytest.mark.timeout(180)

IDENTITIES = {  # name: (EmoDB API key, SigV4 access key id, secret)
    "none": (None, None, None),
    "wrong-secret": ("k-wrong", "AKIDADMIN", "not-the-secret"),
    "read-only": ("k-reader", "AKIDREADER", "reader/secret+1"),
    "poster": ("k-poster", "AKIDPOSTER", "poster/secret+2"),
    "admin": ("k-admin", "AKIDADMIN", "admin/secret+3"),
}
GRANTS = {"read-only": {"get_status"}, "poster": {"post", "get_status"},
          "admin": {"post", "poll", "get_status", "admin"}, "none": set(), "wrong-secret": set()}

CONFIG = f"""
api_keys:
  - name: reader
    key: k-reader
    sqs_credentials: [{{access_key_id: AKIDREADER, secret_access_key: "reader/secret+1"}}]
    permissions: ["queue|get_status|*"]
  - name: poster
    key: k-poster
    sqs_credentials: [{{access_key_id: AKIDPOSTER, secret_access_key: "poster/secret+2"}}]
    permissions: ["queue|post,get_status|*"]
  - name: admin
    key: k-admin
    sqs_credentials: [{{access_key_id: AKIDADMIN, secret_access_key: "admin/secret+3"}}]
    permissions: ["queue|*|*"]
  - name: scoped
    sqs_credentials: [{{access_key_id: AKIDSCOPED, secret_access_key: scoped}}]
    permissions: ["queue|*|sqs:{ACCOUNT}:*:matrix-*"]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("authz"), keys=False, workers=1, config_text=CONFIG,
                        extra_args=("--fsync", "never")) as srv:
        yield srv


def _state(root: Path) -> dict[str, int]:
    """The data directory without ``trash/`` (emptied in the background after an allowed purge)."""
    return {k: v for k, v in tree(root).items() if not k.startswith("trash")}


def _boto(server: Server, identity: str) -> Any:
    _, key_id, secret = IDENTITIES[identity]
    sqs = client(server.url, access_key=key_id or "unused", secret_key=secret or "unused")
    if key_id is None:  # send the request unsigned
        from botocore import UNSIGNED

        sqs.meta.events.register_first("choose-signer.sqs.*", lambda **_: UNSIGNED)
    return sqs


def _query(server: Server, identity: str, action: str, params: dict[str, str]) -> tuple[int, str]:
    """A Query-protocol call signed by botocore's SigV4 signer; (status, error code or 'ok')."""
    _, key_id, secret = IDENTITIES[identity]
    body = urlencode({"Action": action, "Version": "2012-11-05", **params})
    req = AWSRequest("POST", server.url + "/", data=body.encode(),
                     headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    if key_id is not None:
        SigV4Auth(Credentials(key_id, secret), "sqs", REGION).add_auth(req)
    reply = requests.post(server.url + "/", data=body.encode(), headers=dict(req.headers.items()), timeout=30)
    if reply.status_code == 200:
        return 200, "ok"
    assert reply.headers["Content-Type"].startswith("text/xml"), reply.text
    code = reply.text.split("<Code>", 1)[1].split("</Code>", 1)[0]
    return reply.status_code, code


def _http(server: Server, identity: str, method: str, path: str, body: bytes | None = None,
          content_type: str = "application/json") -> tuple[int, str]:
    key = IDENTITIES[identity][0]
    headers = {"Content-Type": content_type, **({"X-BV-API-Key": key} if key else {})}
    reply = requests.request(method, server.url + path, data=body, headers=headers, timeout=30)
    return reply.status_code, "ok" if reply.status_code < 400 else str(reply.status_code)


QUEUE = "matrix-q"
URL_PATH = f"/{ACCOUNT}/{QUEUE}"
STORE = f"sqs:{ACCOUNT}:{REGION}:{QUEUE}"

Op = Callable[[Server, str], tuple[int, str]]


def _sqs_op(action: str, **kwargs: Any) -> Op:
    def run(server: Server, identity: str) -> tuple[int, str]:
        params = {k: (server.url + v if k == "QueueUrl" else v) for k, v in kwargs.items()}
        method = action[0].lower() + "".join(c if c.islower() else "_" + c.lower() for c in action[1:])
        try:
            getattr(_boto(server, identity), method)(**params)
        except ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
        return 200, "ok"
    return run


def _query_op(action: str, **params: str) -> Op:
    def run(server: Server, identity: str) -> tuple[int, str]:
        full = {k: (server.url + v if k == "QueueUrl" else v) for k, v in params.items()}
        return _query(server, identity, action, full)
    return run


OPS: list[tuple[str, str, str, Op]] = [  # door, operation, permission, call
    ("EmoDB", "send", "post", lambda s, i: _http(s, i, "POST", "/queue/1/emo-q/send", b'"m"')),
    ("EmoDB", "peek", "poll", lambda s, i: _http(s, i, "GET", "/queue/1/emo-q/peek")),
    ("EmoDB", "size", "get_status", lambda s, i: _http(s, i, "GET", "/queue/1/emo-q/size")),
    ("EmoDB", "peek SQS queue", "poll", lambda s, i: _http(s, i, "GET", f"/queue/1/{STORE}/peek")),
    ("EmoDB", "purge SQS queue", "admin", lambda s, i: _http(s, i, "DELETE", f"/queue/1/{STORE}")),
    ("MQ", "create", "post", lambda s, i: _http(s, i, "PUT", "/mq/mq-q")),
    ("MQ", "add", "post", lambda s, i: _http(s, i, "POST", "/mq/mq-q/messages", b"m", "text/plain")),
    ("MQ", "exists", "get_status", lambda s, i: _http(s, i, "GET", "/mq/mq-q")),
    ("MQ", "fetch", "poll", lambda s, i: _http(s, i, "GET", "/mq/mq-q/messages?ttl=600")),
    ("SQS JSON", "CreateQueue", "admin", _sqs_op("CreateQueue", QueueName=QUEUE)),
    ("SQS JSON", "GetQueueUrl", "get_status", _sqs_op("GetQueueUrl", QueueName=QUEUE)),
    ("SQS JSON", "GetQueueAttributes", "get_status", _sqs_op("GetQueueAttributes", QueueUrl=URL_PATH,
                                                            AttributeNames=["All"])),
    ("SQS JSON", "ListQueueTags", "get_status", _sqs_op("ListQueueTags", QueueUrl=URL_PATH)),
    ("SQS JSON", "SendMessage", "post", _sqs_op("SendMessage", QueueUrl=URL_PATH, MessageBody="m")),
    ("SQS JSON", "ReceiveMessage", "poll", _sqs_op("ReceiveMessage", QueueUrl=URL_PATH, VisibilityTimeout=600)),
    ("SQS JSON", "SetQueueAttributes", "admin", _sqs_op("SetQueueAttributes", QueueUrl=URL_PATH,
                                                        Attributes={"DelaySeconds": "0"})),
    ("SQS JSON", "TagQueue", "admin", _sqs_op("TagQueue", QueueUrl=URL_PATH, Tags={"k": "v"})),
    ("SQS JSON", "PurgeQueue", "admin", _sqs_op("PurgeQueue", QueueUrl=URL_PATH)),
    ("SQS Query", "GetQueueUrl", "get_status", _query_op("GetQueueUrl", QueueName=QUEUE)),
    ("SQS Query", "SendMessage", "post", _query_op("SendMessage", QueueUrl=URL_PATH, MessageBody="q")),
    ("SQS Query", "ReceiveMessage", "poll", _query_op("ReceiveMessage", QueueUrl=URL_PATH,
                                                      VisibilityTimeout="600")),
    ("SQS Query", "DeleteQueue", "admin", _query_op("DeleteQueue", QueueUrl=URL_PATH)),
]
ORDER = ["none", "wrong-secret", "read-only", "poster", "admin"]
DENIED = {"EmoDB": {"none": "403", "wrong-secret": "403", "*": "403"},
          "MQ": {"none": "403", "wrong-secret": "403", "*": "403"},
          "SQS JSON": {"none": "MissingAuthenticationToken", "wrong-secret": "SignatureDoesNotMatch",
                       "*": "AccessDenied"},
          "SQS Query": {"none": "MissingAuthenticationToken", "wrong-secret": "SignatureDoesNotMatch",
                        "*": "AccessDenied"}}


def test_auth_matrix(server: Server) -> None:
    observed: dict[tuple[str, str], dict[str, str]] = {}
    problems: list[str] = []
    for door, op, permission, call in OPS:
        row = observed.setdefault((door, f"{op} ({permission})"), {})
        for identity in ORDER:  # admin last, so the queue exists for the others' successful calls
            allowed = permission in GRANTS[identity]
            before = _state(server.root)
            status, code = call(server, identity)
            row[identity] = code if code == "ok" else f"{status} {code}"
            if allowed:
                if code != "ok":
                    problems.append(f"{door} {op} as {identity}: expected success, got {status} {code}")
                continue
            want = DENIED[door].get(identity, DENIED[door]["*"])
            if status != 403 or code != want:
                problems.append(f"{door} {op} as {identity}: expected 403 {want}, got {status} {code}")
            after = _state(server.root)
            if after != before:
                changed = sorted(set(after.items()) ^ set(before.items()))[:6]
                problems.append(f"{door} {op} as {identity}: a refused request changed the data directory: {changed}")
    out = os.environ.get("SPOOLQ_AUTH_MATRIX")
    if out:
        lines = ["| door | operation (permission) | " + " | ".join(ORDER) + " |",
                 "|---|---|" + "---|" * len(ORDER)]
        lines += [f"| {door} | {op} | " + " | ".join(row[i] for i in ORDER) + " |"
                  for (door, op), row in observed.items()]
        Path(out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not problems, "\n".join(problems)


def test_list_queues_shows_only_what_the_identity_may_see(server: Server) -> None:
    admin = _boto(server, "admin")
    for name in ("matrix-visible", "hidden-one"):
        admin.create_queue(QueueName=name)
    scoped = client(server.url, access_key="AKIDSCOPED", secret_key="scoped")
    urls = scoped.list_queues().get("QueueUrls", [])
    assert any(u.endswith("/matrix-visible") for u in urls)
    assert not any("hidden" in u for u in urls)
    assert any(u.endswith("/hidden-one") for u in admin.list_queues()["QueueUrls"])
    with pytest.raises(ClientError) as info:
        scoped.get_queue_url(QueueName="hidden-one")
    assert info.value.response["Error"]["Code"] == "AccessDenied"
    assert scoped.get_queue_url(QueueName="matrix-visible")["QueueUrl"].endswith("/matrix-visible")


def test_same_call_twice_in_one_second_is_not_a_replay(server: Server) -> None:
    """boto3 signs no nonce: identical calls in the same second carry identical signatures."""
    admin = _boto(server, "admin")
    seen: list[str] = []
    admin.meta.events.register("before-send.sqs.*", lambda request, **_: seen.append(
        request.headers["Authorization"].decode() if isinstance(request.headers["Authorization"], bytes)
        else request.headers["Authorization"]))
    for _ in range(3):
        admin.list_queues(QueueNamePrefix="nothing-here")
    assert len(seen) == 3  # every call answered 200 (a refusal raises)
