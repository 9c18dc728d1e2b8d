"""Cross-tenant writes: every parameter of every door that names a queue, walked as another team.

Two teams share one service: team A may do anything on its queues (``a-*``), team B on its own
(``b-*``), and ``ops`` everywhere. With A's credentials (its API key, its SigV4 keys, its Disque
AUTH) the walk names B's queues in every parameter of every door that takes a queue name, an ARN or
a handle that stands for a queue: the queue an operation acts on, and every *second* queue a
setting or an action makes messages arrive in (a dead-letter queue, a move's destination, a
redrive's default destination). Each must be refused (403, ``AccessDenied``, ``-NOPERM``), except
the parameters that name a queue only to allow it something (a ``RedriveAllowPolicy``'s source
queues, a ``Policy``'s resources), which are accepted and must write nothing. Then A drives the
traffic that would have landed in B's queues had any setting stuck (messages dead-lettered past
their receives, moves run), and B's queues must be as they were: their messages, their claims,
their settings. The goal is no cross-tenant write at all.

:data:`WALK` lists each door, operation and parameter; the meta-checks make the list complete:
every parameter and body field of every operation of the HTTP doors' OpenAPI document, every input
member of every SQS action, every settable SQS attribute, every queue setting and every Disque
command is classified, and every one classified as naming a queue has a row. A parameter added
later fails this test until it is classified and walked.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
import redis
import requests
from botocore import xform_name
from botocore.exceptions import ClientError

from spoolq.disque.info import TABLE as DISQUE_TABLE
from spoolq.http.openapi import openapi_dict
from spoolq.http.sqs import ACTIONS
from spoolq.http.sqs.attributes import SETTABLE as SQS_SETTABLE
from spoolq.queues.queue_settings import SETTABLE as QUEUE_SETTINGS
from tests.e2e.spoolq_server import Server, free_port, running_server
from tests.sqs.harness import ACCOUNT, REGION, client

pytestmark = [pytest.mark.hostile, pytest.mark.timeout(300)]

CONFIG = """
api_keys:
  - name: team-a
    key: key-a
    sqs_credentials: [{access_key_id: AKIDTEAMA, secret_access_key: secret-a}]
    permissions: ["queue|*|a-*", "queue|*|sqs:*:*:a-*"]
  - name: team-b
    key: key-b
    sqs_credentials: [{access_key_id: AKIDTEAMB, secret_access_key: secret-b}]
    permissions: ["queue|*|b-*", "queue|*|sqs:*:*:b-*"]
  - name: ops
    key: key-ops
    sqs_credentials: [{access_key_id: AKIDOPS, secret_access_key: secret-ops}]
    permissions: ["queue"]
"""
SQS_KEYS = {"a": ("AKIDTEAMA", "secret-a"), "b": ("AKIDTEAMB", "secret-b"), "ops": ("AKIDOPS", "secret-ops")}


def sqs_name(name: str) -> str:
    return f"sqs:{ACCOUNT}:{REGION}:{name}"


def arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


#: B's queues, by store name: what the walk must leave exactly as it was
B_QUEUES = ["b-q", "b-q2", "b-empty", "__dedupq:b-dq", "__dedupq:b-dq-empty", "mq:b-mq", "disque:b-jobs",
            sqs_name("b-q"), sqs_name("b-dlq"), sqs_name("b-src"), sqs_name("b-src2")]


@dataclass
class World:
    """The service, the teams' clients, and the handles B's setup produced."""

    server: Server
    disque_port: int
    handles: dict[str, str] = field(default_factory=dict)

    def http(self, who: str) -> requests.Session:
        s = requests.Session()
        s.headers["X-BV-API-Key"] = f"key-{who}"
        return s

    def sqs(self, who: str, protocol: str = "json") -> Any:
        key, secret = SQS_KEYS[who]
        return client(self.server.url, access_key=key, secret_key=secret, protocol=protocol)

    def url(self, name: str) -> str:
        return f"{self.server.url}/{ACCOUNT}/{name}"

    def disque(self, who: str) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.disque_port, password=f"key-{who}", protocol=2,
                           socket_timeout=30)


def ok(r: requests.Response) -> requests.Response:
    assert r.status_code < 300, (r.request.method, r.request.url, r.status_code, r.text[:300])
    return r


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    dport = free_port()
    with running_server(tmp_path_factory.mktemp("tenants"), keys=False, workers=1, threads=8, config_text=CONFIG,
                        extra_args=("--fsync", "never", "--disque-port", str(dport))) as server:
        w = World(server, dport)
        deadline = time.monotonic() + 30
        while True:
            try:
                w.disque("b").ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        _set_up(w)
        yield w


def _set_up(w: World) -> None:
    """B's queues with a message each (one SQS message claimed for an hour), a finished move of
    each kind, a Disque job; A's queues; and, made by ops, B's ``b-src2`` dead-lettering into A's
    ``a-dlq`` (so that a redrive of ``a-dlq`` without a destination would go to B)."""
    b, a = w.http("b"), w.http("a")
    for door, name in (("queue", "b-q"), ("queue", "b-q2"), ("dedupq", "b-dq"), ("queue", "a-q"), ("dedupq", "a-dq")):
        ok((a if name.startswith("a-") else b).post(f"{w.server.url}/{door}/1/{name}/send", json=f"{name} marker"))
    for door, name in (("queue", "b-empty"), ("dedupq", "b-dq-empty")):
        ok(b.post(f"{w.server.url}/{door}/1/{name}/send", json="x"))
        ok(b.delete(f"{w.server.url}/{door}/1/{name}"))
    ok(b.put(f"{w.server.url}/mq/b-mq"))
    ok(b.post(f"{w.server.url}/mq/b-mq/messages", data="b-mq marker"))
    ok(a.put(f"{w.server.url}/mq/a-mq"))
    w.handles["b_job"] = w.disque("b").execute_command("ADDJOB", "b-jobs", "b-jobs marker", 0).decode()
    w.disque("a").execute_command("ADDJOB", "a-jobs", "a-jobs marker", 0)
    for door, source, destination in (("queue", "b-empty", "b-q2"), ("dedupq", "b-dq-empty", "b-dq")):
        w.handles[f"b_{door}_move"] = ok(b.post(f"{w.server.url}/{door}/1/_move",
                                                params={"from": source, "to": destination})).json()["id"]

    sb, sa, so = w.sqs("b"), w.sqs("a"), w.sqs("ops")
    sb.create_queue(QueueName="b-dlq", Attributes={"RedriveAllowPolicy": json.dumps({"redrivePermission": "allowAll"})})
    sb.create_queue(QueueName="b-q")
    sb.create_queue(QueueName="b-src", Attributes={"RedrivePolicy": json.dumps(
        {"deadLetterTargetArn": arn("b-dlq"), "maxReceiveCount": 5})})
    sb.send_message(QueueUrl=w.url("b-q"), MessageBody="b-q marker")
    sb.send_message(QueueUrl=w.url("b-q"), MessageBody="b-q claimed")
    got = sb.receive_message(QueueUrl=w.url("b-q"), MaxNumberOfMessages=1, VisibilityTimeout=3600)["Messages"]
    w.handles["b_receipt"] = got[0]["ReceiptHandle"]
    w.handles["b_task"] = sb.start_message_move_task(SourceArn=arn("b-dlq"))["TaskHandle"]
    for name in ("a-q", "a-dlq"):
        sa.create_queue(QueueName=name)
    sa.send_message(QueueUrl=w.url("a-q"), MessageBody="a-q marker")
    so.create_queue(QueueName="b-src2", Attributes={"RedrivePolicy": json.dumps(
        {"deadLetterTargetArn": arn("a-dlq"), "maxReceiveCount": 5})})
    sa.send_message(QueueUrl=w.url("a-dlq"), MessageBody="sent to a-dlq directly: its origin is unknown")
    console = w.http("b")
    moved = ok(console.post(f"{w.server.url}/console/api/queues/b-empty/move", json={"to": "b-q2"})).json()
    w.handles["b_console_move"] = moved["ref"] if "ref" in moved else moved["id"]
    time.sleep(1.0)  # the moves of empty queues finish


def b_state(w: World) -> dict[str, Any]:
    """What A must not change: each of B's queues' messages (ready and claimed), settings and tags."""
    ops, url = w.http("ops"), w.server.url
    out: dict[str, Any] = {}
    for name in B_QUEUES:
        door, base = ("dedupq", name.removeprefix("__dedupq:")) if name.startswith("__dedupq:") else ("queue", name)
        q = f"{url}/{door}/1/{quote(base, safe=':')}"
        peek = ok(ops.get(q + "/peek", params={"limit": 100})).json()
        out[name] = {"size": ok(ops.get(q + "/size")).json(), "claims": ok(ops.get(q + "/claimcount")).json(),
                     "ready": sorted(json.dumps(m.get("payload"), sort_keys=True) for m in peek),
                     "settings": ok(ops.get(q + "/_settings")).json()}
        if name.startswith("sqs:"):
            out[name]["tags"] = w.sqs("ops").list_queue_tags(QueueUrl=w.url(name.rsplit(":", 1)[1])).get("Tags", {})
    return out


# --- the walk -----------------------------------------------------------------------------------

REFUSED_HTTP = {403}
#: the SQS answers that refuse (a receipt handle of another queue is invalid for this one)
REFUSED_SQS = {"AccessDenied", "ReceiptHandleIsInvalid"}


@dataclass(frozen=True)
class Row:
    """One parameter of one operation of one door, named with B's queue by team A. ``expect``:
    ``refused``; ``accepted`` (it names a queue to allow it something, and writes nothing there);
    ``filtered`` (a listing: B's queues are left out)."""

    door: str
    operation: str
    parameter: str
    attempt: Callable[[World], Any]
    expect: str = "refused"


def http(method: str, path: str, **kw: Any) -> Callable[[World], Any]:
    def attempt(w: World) -> Any:
        r = w.http("a").request(method, w.server.url + path.replace("{SQS}", f"sqs:{ACCOUNT}:{REGION}:"), **kw)
        return "refused" if r.status_code in REFUSED_HTTP else (r.status_code, r.text[:200])
    return attempt


def resolve(value: Any, w: World) -> Any:
    """``value`` with every callable in it (a handle only the world knows) called."""
    if callable(value):
        return value(w)
    if isinstance(value, dict):
        return {k: resolve(v, w) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, w) for v in value]
    return value


def sqs(action: str, protocol: str = "json", **params: Any) -> Callable[[World], Any]:
    def attempt(w: World) -> Any:
        resolved = resolve(params, w)
        try:
            reply = getattr(w.sqs("a", protocol), xform_name(action))(**resolved)
        except ClientError as e:
            code = e.response["Error"]["Code"]
            return "refused" if code in REFUSED_SQS else code
        if action.endswith("Batch"):  # each entry fails alone
            return "refused" if reply.get("Failed") and not reply.get("Successful") else reply
        if action == "ListQueues":
            return "filtered" if not any("/b-" in u for u in reply.get("QueueUrls", [])) else reply
        return "accepted"
    return attempt


def disque(*argv: Any) -> Callable[[World], Any]:
    def attempt(w: World) -> Any:
        args = [a(w) if callable(a) else a for a in argv]
        try:
            reply = w.disque("a").execute_command(*args)
        except redis.ResponseError as e:
            return "refused" if "may not" in str(e) else str(e)
        if args[0] == "QSCAN":
            return "filtered" if not [q for q in reply[1] if q.startswith(b"b-")] else reply
        if args[0] == "JSCAN":
            return "filtered" if not reply[1] else reply
        return reply
    return attempt


def receipt(w: World) -> str:
    return w.handles["b_receipt"]


def url_of(name: str) -> Callable[[World], str]:
    return lambda w: w.url(name)


def redrive(target: str) -> str:
    return json.dumps({"deadLetterTargetArn": arn(target), "maxReceiveCount": 1})


ALLOW_B = json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [arn("b-q")]})
POLICY_B = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "b", "Effect": "Allow", "Principal": "*", "Action": "SQS:SendMessage", "Resource": arn("b-q")}]})
B = url_of("b-q")

SQS_WALK = [
    # the queue an action acts on
    *[Row("sqs", action, "QueueUrl", sqs(action, QueueUrl=B, **extra)) for action, extra in {
        "GetQueueAttributes": {"AttributeNames": ["All"]},
        "SetQueueAttributes": {"Attributes": {"DelaySeconds": "1"}},
        "DeleteQueue": {}, "PurgeQueue": {}, "TagQueue": {"Tags": {"by": "a"}}, "UntagQueue": {"TagKeys": ["x"]},
        "ListQueueTags": {}, "ListDeadLetterSourceQueues": {},
        "AddPermission": {"Label": "a", "AWSAccountIds": [ACCOUNT], "Actions": ["SendMessage"]},
        "RemovePermission": {"Label": "a"}, "SendMessage": {"MessageBody": "from a"},
        "SendMessageBatch": {"Entries": [{"Id": "1", "MessageBody": "from a"}]},
        "ReceiveMessage": {"VisibilityTimeout": 0}, "DeleteMessage": {"ReceiptHandle": receipt},
        "DeleteMessageBatch": {"Entries": [{"Id": "1", "ReceiptHandle": receipt}]},
        "ChangeMessageVisibility": {"ReceiptHandle": receipt, "VisibilityTimeout": 0},
        "ChangeMessageVisibilityBatch": {"Entries": [{"Id": "1", "ReceiptHandle": receipt, "VisibilityTimeout": 0}]},
    }.items()],
    Row("sqs", "CreateQueue", "QueueName", sqs("CreateQueue", QueueName="b-new")),
    Row("sqs", "GetQueueUrl", "QueueName", sqs("GetQueueUrl", QueueName="b-q")),
    Row("sqs", "GetQueueUrl", "QueueOwnerAWSAccountId", sqs("GetQueueUrl", QueueName="b-q",
                                                            QueueOwnerAWSAccountId=ACCOUNT)),
    Row("sqs", "ListQueues", "QueueNamePrefix", sqs("ListQueues", QueueNamePrefix="b-"), "filtered"),
    Row("sqs", "StartMessageMoveTask", "SourceArn", sqs("StartMessageMoveTask", SourceArn=arn("b-dlq"),
                                                        DestinationArn=arn("a-q"))),
    Row("sqs", "ListMessageMoveTasks", "SourceArn", sqs("ListMessageMoveTasks", SourceArn=arn("b-dlq"))),
    Row("sqs", "CancelMessageMoveTask", "TaskHandle", sqs("CancelMessageMoveTask", TaskHandle=lambda w: w.handles["b_task"])),
    # a receipt handle names its queue: B's, on A's queue
    Row("sqs", "DeleteMessage", "ReceiptHandle", sqs("DeleteMessage", QueueUrl=url_of("a-q"), ReceiptHandle=receipt)),
    Row("sqs", "ChangeMessageVisibility", "ReceiptHandle", sqs(
        "ChangeMessageVisibility", QueueUrl=url_of("a-q"), ReceiptHandle=receipt, VisibilityTimeout=0)),
    Row("sqs", "DeleteMessageBatch", "Entries.ReceiptHandle", sqs(
        "DeleteMessageBatch", QueueUrl=url_of("a-q"), Entries=[{"Id": "1", "ReceiptHandle": receipt}])),
    Row("sqs", "ChangeMessageVisibilityBatch", "Entries.ReceiptHandle", sqs(
        "ChangeMessageVisibilityBatch", QueueUrl=url_of("a-q"),
        Entries=[{"Id": "1", "ReceiptHandle": receipt, "VisibilityTimeout": 0}])),
    # second queues: messages would arrive there
    Row("sqs", "StartMessageMoveTask", "DestinationArn", sqs("StartMessageMoveTask", SourceArn=arn("a-dlq"),
                                                             DestinationArn=arn("b-q"))),
    Row("sqs", "StartMessageMoveTask", "DestinationArn left out (the source queues)",
        sqs("StartMessageMoveTask", SourceArn=arn("a-dlq"))),
    Row("sqs", "SetQueueAttributes", "Attributes.RedrivePolicy", sqs(
        "SetQueueAttributes", QueueUrl=url_of("a-q"), Attributes={"RedrivePolicy": redrive("b-dlq")})),
    Row("sqs", "SetQueueAttributes", "Attributes.RedrivePolicy (a queue B does not have)", sqs(
        "SetQueueAttributes", QueueUrl=url_of("a-q"), Attributes={"RedrivePolicy": redrive("b-none")})),
    Row("sqs", "CreateQueue", "Attributes.RedrivePolicy", sqs(
        "CreateQueue", QueueName="a-new1", Attributes={"RedrivePolicy": redrive("b-dlq")})),
    Row("sqs", "SetQueueAttributes", "Attributes.RedrivePolicy (the Query protocol)", sqs(
        "SetQueueAttributes", "query", QueueUrl=url_of("a-q"), Attributes={"RedrivePolicy": redrive("b-dlq")})),
    Row("sqs", "StartMessageMoveTask", "DestinationArn (the Query protocol)", sqs(
        "StartMessageMoveTask", "query", SourceArn=arn("a-dlq"), DestinationArn=arn("b-q"))),
    # queues named to be allowed something: accepted, and nothing arrives there
    Row("sqs", "SetQueueAttributes", "Attributes.RedriveAllowPolicy", sqs(
        "SetQueueAttributes", QueueUrl=url_of("a-q"), Attributes={"RedriveAllowPolicy": ALLOW_B}), "accepted"),
    Row("sqs", "CreateQueue", "Attributes.RedriveAllowPolicy", sqs(
        "CreateQueue", QueueName="a-new2", Attributes={"RedriveAllowPolicy": ALLOW_B}), "accepted"),
    Row("sqs", "SetQueueAttributes", "Attributes.Policy", sqs(
        "SetQueueAttributes", QueueUrl=url_of("a-q"), Attributes={"Policy": POLICY_B}), "accepted"),
    Row("sqs", "CreateQueue", "Attributes.Policy", sqs(
        "CreateQueue", QueueName="a-new3", Attributes={"Policy": POLICY_B}), "accepted"),
]

# The HTTP doors: every operation of the OpenAPI document whose path names a queue (``{queue}``,
# ``{name}``) is walked with B's queue there (OWN), and every other parameter that names a queue
# has its rows below.
B_IN_PATH = {"/queue/1/": "b-q", "/dedupq/1/": "b-dq", "/mq/": "b-mq", "/console/api/": "b-q"}
OWN: dict[str, dict[str, Any]] = {
    "POST /queue/1/{queue}/send": {"json": "x"}, "POST /queue/1/{queue}/sendbatch": {"json": ["x"]},
    "GET /queue/1/{queue}/poll": {}, "GET /queue/1/{queue}/peek": {}, "POST /queue/1/{queue}/renew": {"json": []},
    "POST /queue/1/{queue}/ack": {"json": []}, "POST /queue/1/{queue}/claimbatch": {"params": {"token": "t1"}},
    "POST /queue/1/{queue}/renewbatches": {"json": []}, "POST /queue/1/{queue}/ackbatches": {"json": []},
    "GET /queue/1/{queue}/size": {}, "GET /queue/1/{queue}/claimcount": {}, "POST /queue/1/{queue}/unclaimall": {},
    "DELETE /queue/1/{queue}": {}, "GET /queue/1/{queue}/_settings": {},
    "POST /queue/1/{queue}/_settings": {"json": {"delay": 1}},
    "PUT /mq/{queue}": {}, "GET /mq/{queue}": {}, "DELETE /mq/{queue}": {}, "GET /mq/{queue}/messages": {},
    "POST /mq/{queue}/messages": {"data": "x"}, "DELETE /mq/{queue}/messages/{message_id}": {},
    "GET /console/api/queues/{name}": {}, "POST /console/api/queues/{name}/delete": {"json": {"confirm": "b-q"}},
    "GET /console/api/queues/{name}/messages": {}, "POST /console/api/queues/{name}/messages": {"json": {"body": "1"}},
    "POST /console/api/queues/{name}/receive": {"json": {}}, "POST /console/api/queues/{name}/ack": {
        "json": {"receipts": ["r"]}}, "POST /console/api/queues/{name}/release": {"json": {"receipts": ["r"]}},
    "POST /console/api/queues/{name}/nack": {"json": {"receipts": ["r"]}},
    "POST /console/api/queues/{name}/visibility": {"json": {"receipts": ["r"], "visibility_timeout": 0}},
    "POST /console/api/queues/{name}/messages/{message_id}/delete": {},
    "POST /console/api/queues/{name}/purge": {"json": {"confirm": "b-q"}}, "POST /console/api/queues/{name}/unclaim": {},
    "POST /console/api/queues/{name}/move": {"json": {"to": "a-q"}},
    "POST /console/api/queues/{name}/redrive": {"json": {"to": "a-q"}},
}
OWN.update({op.replace("/queue/1/", "/dedupq/1/"): kw for op, kw in OWN.items() if "/queue/1/" in op})


def own_rows() -> list[Row]:
    rows = []
    for op, kw in OWN.items():
        method, path = op.split(" ", 1)
        queue = next(b for prefix, b in B_IN_PATH.items() if path.startswith(prefix))
        door = path.split("/")[1] if not path.startswith("/console") else "console"
        concrete = path.replace("{queue}", queue).replace("{name}", queue).replace("{message_id}", "0" * 40)
        rows.append(Row(door, op, "name" if "{name}" in path else "queue", http(method, concrete, **kw)))
    return rows


SETTINGS = "POST /queue/1/{queue}/_settings"
HTTP_WALK = [
    *own_rows(),
    # EmoDB's door reaching another door's queue by its store name
    Row("queue", "POST /queue/1/{queue}/send", "queue (an SQS queue's store name)",
        http("POST", "/queue/1/{SQS}b-q/send", json="x")),
    Row("queue", SETTINGS, "queue (an SQS queue's store name)",
        http("POST", "/queue/1/{SQS}b-q/_settings", json={"delay": 1})),
    # second queues and sources
    Row("queue", SETTINGS, "dead_letter.queue", http("POST", "/queue/1/a-q/_settings", json={
        "dead_letter": {"queue": "b-q", "max_receives": 1}})),
    Row("queue", SETTINGS, "dead_letter.queue (an SQS queue's)", http(
        "POST", "/queue/1/{SQS}a-q/_settings", json={"dead_letter": {"queue": sqs_name("b-dlq"), "max_receives": 1}})),
    Row("queue", SETTINGS, "dead_letter.queue (a queue B does not have)", http("POST", "/queue/1/a-q/_settings", json={
        "dead_letter": {"queue": "b-none", "max_receives": 1}})),
    Row("dedupq", SETTINGS.replace("queue/1", "dedupq/1"), "dead_letter.queue", http(
        "POST", "/dedupq/1/a-dq/_settings", json={"dead_letter": {"queue": "__dedupq:b-dq", "max_receives": 1}})),
    Row("queue", "POST /queue/1/_move", "to", http("POST", "/queue/1/_move", params={"from": "a-q", "to": "b-q"})),
    Row("queue", "POST /queue/1/_move", "from", http("POST", "/queue/1/_move", params={"from": "b-q", "to": "a-q"})),
    Row("dedupq", "POST /dedupq/1/_move", "to", http("POST", "/dedupq/1/_move", params={"from": "a-dq", "to": "b-dq"})),
    Row("dedupq", "POST /dedupq/1/_move", "from", http("POST", "/dedupq/1/_move",
                                                        params={"from": "b-dq", "to": "a-dq"})),
    Row("queue", "POST /queue/1/_sendbatch", "<keys>", http("POST", "/queue/1/_sendbatch", json={"b-q": ["x"]})),
    Row("dedupq", "POST /dedupq/1/_sendbatch", "<keys>", http("POST", "/dedupq/1/_sendbatch", json={"b-dq": ["x"]})),
    *[Row(door, f"GET /{door}/1/_move/{{ref}}", "ref",
          lambda w, door=door: http("GET", f"/{door}/1/_move/{w.handles[f'b_{door}_move']}")(w))
      for door in ("queue", "dedupq")],
    Row("queue", "GET /queue/1/_queues", "prefix", lambda w: "filtered" if not [
        q for q in w.http("a").get(w.server.url + "/queue/1/_queues", params={"prefix": "b-"}).json()] else "listed",
        "filtered"),
    Row("console", "GET /console/api/names", "name", lambda w: "filtered" if not w.http("a").get(
        w.server.url + "/console/api/names", params={"name": "b-q"}).json()["queues"] else "listed", "filtered"),
    Row("console", "POST /console/api/queues", "name", http("POST", "/console/api/queues", json={
        "door": "queue", "name": "b-new"})),
    Row("console", "POST /console/api/queues", "settings.dead_letter.queue", http("POST", "/console/api/queues", json={
        "door": "queue", "name": "a-new4", "settings": {"dead_letter": {"queue": "b-q", "max_receives": 1}}})),
    Row("console", "POST /console/api/queues/delete-empty", "queues", http(
        "POST", "/console/api/queues/delete-empty", json={"queues": ["b-empty"]})),
    Row("console", "POST /console/api/queues/{name}/move", "to", http("POST", "/console/api/queues/a-q/move",
                                                                       json={"to": "b-q"})),
    Row("console", "POST /console/api/queues/{name}/redrive", "to", http("POST", "/console/api/queues/a-q/redrive",
                                                                          json={"to": "b-q"})),
    Row("console", "POST /console/api/queues/{name}/redrive", "to left out (the source queue)", http(
        "POST", "/console/api/queues/{SQS}a-dlq/redrive", json={})),
    Row("console", "POST /console/api/moves/{ref}/cancel", "ref",
        lambda w: http("POST", f"/console/api/moves/{w.handles['b_console_move']}/cancel")(w)),
    Row("console", "GET /console/api/rates", "queue", http("GET", "/console/api/rates", params={"queue": "b-q"})),
]


def job(w: World) -> str:
    return w.handles["b_job"]


DISQUE_WALK = [
    Row("disque", "ADDJOB", "queue", disque("ADDJOB", "b-jobs", "from a", 0)),
    Row("disque", "GETJOB", "FROM queues", disque("GETJOB", "NOHANG", "FROM", "b-jobs")),
    Row("disque", "GETJOBS", "FROM queues", disque("GETJOBS", "NOHANG", "FROM", "b-jobs")),
    *[Row("disque", name, "queue", disque(name, "b-jobs", *extra)) for name, extra in {
        "QLEN": (), "QPEEK": (1,), "QSTAT": (), "PAUSE": ("in",)}.items()],
    *[Row("disque", name, "job ids", disque(name, job)) for name in (
        "ACKJOB", "FASTACK", "DELJOB", "NACK", "ENQUEUE", "QUEUE", "DEQUEUE", "WORKING", "SHOW")],
    Row("disque", "JSCAN", "QUEUE", disque("JSCAN", "QUEUE", "b-jobs"), "filtered"),
    Row("disque", "QSCAN", "(every queue)", disque("QSCAN"), "filtered"),
]

WALK = [*SQS_WALK, *HTTP_WALK, *DISQUE_WALK]


# --- what names a queue: the classification the meta-checks hold the walk to ---------------------

#: parameters and body fields of the HTTP doors that never name a queue (``<body>``: a message or a
#: list of ids, tokens or messages; ``receipts``, ``message_id``: a message of the path's queue)
HTTP_NOT_QUEUES = {
    "delay", "ttl", "atMostOnce", "archive", "partitioned", "limit", "wait", "meta", "token", "maxBytes", "window",
    "message_id", "confirm", "body", "format", "group_id", "dedup_id", "attributes", "attributes.<keys>", "kind",
    "visibility_timeout", "receipts", "fifo", "content_based_dedup", "region", "tags", "tags.<keys>", "door",
    "max_per_second", "<body>", "archive_retention",
    "dead_letter", "dead_letter.max_receives", "max_message_bytes", "receive_wait", "retention", "settings",
    *(f"settings.{name}" for name in ("archive", "archive_retention", "dead_letter", "dead_letter.max_receives",
                                      "delay", "max_message_bytes", "receive_wait", "retention",
                                      "visibility_timeout")),
}
#: every other parameter that names a queue, by operation (besides ``queue``/``name`` in a path)
HTTP_QUEUE_PARAMETERS = {
    "POST /queue/1/{queue}/_settings": {"dead_letter.queue"}, "POST /dedupq/1/{queue}/_settings": {"dead_letter.queue"},
    "POST /queue/1/_move": {"from", "to"}, "POST /dedupq/1/_move": {"from", "to"},
    "POST /queue/1/_sendbatch": {"<keys>"}, "POST /dedupq/1/_sendbatch": {"<keys>"},
    "GET /queue/1/_move/{ref}": {"ref"}, "GET /dedupq/1/_move/{ref}": {"ref"}, "GET /queue/1/_queues": {"prefix"},
    "POST /console/api/queues": {"name", "settings.dead_letter.queue"},
    "POST /console/api/queues/delete-empty": {"queues"}, "POST /console/api/queues/{name}/move": {"to"},
    "POST /console/api/queues/{name}/redrive": {"to"}, "POST /console/api/moves/{ref}/cancel": {"ref"},
    "GET /console/api/rates": {"queue"}, "GET /console/api/names": {"name"},
}
#: input members of SQS actions that never name a queue
SQS_NOT_QUEUES = {
    "Attributes", "AttributeNames", "MessageAttributeNames", "MessageSystemAttributeNames", "Tags", "TagKeys",
    "Label", "AWSAccountIds", "Actions", "MessageBody", "DelaySeconds", "MessageAttributes",
    "MessageSystemAttributes", "MessageDeduplicationId", "MessageGroupId", "Entries", "MaxNumberOfMessages",
    "VisibilityTimeout", "WaitTimeSeconds", "ReceiveRequestAttemptId", "MaxResults", "NextToken",
    "MaxNumberOfMessagesPerSecond", "QueueOwnerAWSAccountId", "tags",
}
#: SQS attributes that name queues (walked on CreateQueue and SetQueueAttributes); the others do not
SQS_QUEUE_ATTRIBUTES = {"RedrivePolicy", "RedriveAllowPolicy", "Policy"}
#: queue settings (the settings API, the console, declared queues) that name a queue
QUEUE_SETTINGS_NAMING_QUEUES = {"dead_letter"}
#: what each Disque command's arguments name
DISQUE_ARGUMENTS = {
    "addjob": "queue", "getjob": "FROM queues", "getjobs": "FROM queues", "qlen": "queue", "qpeek": "queue",
    "qstat": "queue", "pause": "queue", "jscan": "QUEUE", "qscan": "(every queue)", "scanqueues": "(every queue)",
    "scanjobs": "QUEUE", "show": "job ids", "working": "job ids", "ackjob": "job ids", "fastack": "job ids",
    "deljob": "job ids", "nack": "job ids", "enqueue": "job ids", "queue": "job ids", "dequeue": "job ids",
    **dict.fromkeys(("auth", "ping", "info", "hello", "config", "client", "command", "time", "quit"), ""),
}
#: Disque commands that are another name of a walked one
DISQUE_ALIASES = {"scanqueues": "qscan", "scanjobs": "jscan"}


def _spec_fields(spec: dict[str, Any], schema: Any, prefix: str = "") -> set[str]:
    """Every field name of a (request) schema, dotted; ``<keys>`` for a map's keys."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if not isinstance(schema, dict):
        return set()
    out: set[str] = set()
    for alternative in schema.get("allOf", []) + schema.get("oneOf", []) + schema.get("anyOf", []):
        out |= _spec_fields(spec, alternative, prefix)
    if schema.get("type") == "array":
        out |= _spec_fields(spec, schema.get("items", {}), prefix)
    for name, sub in schema.get("properties", {}).items():
        out |= {prefix + name, *_spec_fields(spec, sub, f"{prefix}{name}.")}
    extra = schema.get("additionalProperties")
    if extra not in (None, False):
        out.add(prefix + "<keys>")
        out |= _spec_fields(spec, extra, prefix + "<keys>.")
    return out


def http_operations() -> dict[str, set[str]]:
    """Every operation of the HTTP doors' OpenAPI document: its parameters and body fields."""
    spec = openapi_dict()
    out = {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method not in ("get", "post", "put", "delete", "patch"):
                continue
            names = {p["name"] for p in item.get("parameters", []) + op.get("parameters", []) if "name" in p}
            for content in op.get("requestBody", {}).get("content", {}).values():
                names |= _spec_fields(spec, content.get("schema", {})) or {"<body>"}
            out[f"{method.upper()} {path}"] = names
    return out


def test_every_http_parameter_that_names_a_queue_is_walked() -> None:
    walked = {(row.operation, row.parameter.split(" ")[0]) for row in HTTP_WALK}
    unclassified, unwalked = [], []
    for op, names in http_operations().items():
        in_path = {n for n in names if f"{{{n}}}" in op.split(" ", 1)[1] and n in ("queue", "name")}
        naming = in_path | HTTP_QUEUE_PARAMETERS.get(op, set())
        unclassified += [(op, n) for n in names - naming - HTTP_NOT_QUEUES - {"ref"} if f"{{{n}}}" not in op]
        unwalked += [(op, n) for n in naming if (op, n) not in walked]
    assert not unclassified, f"parameters nobody said whether they name a queue: {unclassified}"
    assert not unwalked, f"parameters naming a queue that the walk does not try: {unwalked}"
    assert set(HTTP_QUEUE_PARAMETERS) <= set(http_operations()), "a classified operation no longer exists"


def test_every_sqs_parameter_that_names_a_queue_is_walked() -> None:
    model = client("http://127.0.0.1:1").meta.service_model
    walked = {(row.operation, row.parameter.split(" ")[0]) for row in SQS_WALK}
    unclassified, unwalked = [], []
    for action in ACTIONS:
        shape = model.operation_model(action).input_shape
        for member in shape.members if shape is not None else {}:
            if member in SQS_NOT_QUEUES:
                if member == "Entries" and action in ("DeleteMessageBatch", "ChangeMessageVisibilityBatch"):
                    member = "Entries.ReceiptHandle"  # an entry names a message by a handle of its queue
                else:
                    continue
            if member not in ("QueueUrl", "QueueName", "QueueNamePrefix", "SourceArn", "DestinationArn",
                              "TaskHandle", "ReceiptHandle", "Entries.ReceiptHandle"):
                unclassified.append((action, member))
            elif (action, member) not in walked:
                unwalked.append((action, member))
    for attribute in SQS_SETTABLE:
        if attribute in SQS_QUEUE_ATTRIBUTES:
            unwalked += [(a, attribute) for a in ("CreateQueue", "SetQueueAttributes")
                         if (a, f"Attributes.{attribute}") not in walked]
    assert not unclassified, f"SQS parameters nobody said whether they name a queue: {unclassified}"
    assert not unwalked, f"SQS parameters naming a queue that the walk does not try: {unwalked}"
    attribute_values = {"RedrivePolicy": redrive("x"), "RedriveAllowPolicy": ALLOW_B, "Policy": POLICY_B}
    assert set(attribute_values) == SQS_QUEUE_ATTRIBUTES
    assert {a for a in SQS_SETTABLE if a not in SQS_QUEUE_ATTRIBUTES and ("Policy" in a or "Arn" in a)} == set(), (
        "an attribute that looks like it names a queue is not in SQS_QUEUE_ATTRIBUTES")


def test_every_queue_setting_and_disque_command_that_names_a_queue_is_walked() -> None:
    assert {name for name in QUEUE_SETTINGS if name in QUEUE_SETTINGS_NAMING_QUEUES} == QUEUE_SETTINGS_NAMING_QUEUES
    assert all(f"settings.{name}" in HTTP_NOT_QUEUES or name in QUEUE_SETTINGS_NAMING_QUEUES
               for name in QUEUE_SETTINGS), "a queue setting the walk has not classified"
    walked = {(row.operation.lower(), row.parameter) for row in DISQUE_WALK}
    commands = {name for name, _arity, _flags in DISQUE_TABLE}
    assert commands == set(DISQUE_ARGUMENTS), f"Disque commands not classified: {commands ^ set(DISQUE_ARGUMENTS)}"
    unwalked = [(c, what) for c, what in DISQUE_ARGUMENTS.items()
                if what and (DISQUE_ALIASES.get(c, c), what) not in walked]
    assert not unwalked, f"Disque arguments naming a queue that the walk does not try: {unwalked}"


# --- the walk itself --------------------------------------------------------------------------------


def drive(w: World) -> None:
    """A's traffic that would land in B's queues had any of A's attempts stuck: messages received
    past every redrive policy's count, a redrive of A's dead-letter queue to A's own queue."""
    sa, a = w.sqs("a"), w.http("a")
    for n in range(3):
        sa.send_message(QueueUrl=w.url("a-q"), MessageBody=f"a {n}")
        ok(a.post(f"{w.server.url}/queue/1/a-q/send", json=f"a {n}"))
        ok(a.post(f"{w.server.url}/dedupq/1/a-dq/send", json=f"a {n}"))
    for _ in range(3):
        sa.receive_message(QueueUrl=w.url("a-q"), MaxNumberOfMessages=10, VisibilityTimeout=0)
        for door, name in (("queue", "a-q"), ("dedupq", "a-dq")):
            for m in ok(a.get(f"{w.server.url}/{door}/1/{name}/poll", params={"limit": 10, "ttl": 1})).json():
                assert m["id"]
        time.sleep(1.2)
    with contextlib.suppress(ClientError):
        sa.start_message_move_task(SourceArn=arn("a-dlq"), DestinationArn=arn("a-q"))
    time.sleep(2)


def test_no_team_writes_into_another_teams_queue(world: World) -> None:
    before = b_state(world)
    outcomes = [(row, row.attempt(world)) for row in WALK]
    drive(world)
    after = b_state(world)
    wrong = [f"{row.door} {row.operation} {row.parameter}: {got!r} (expected {row.expect})"
             for row, got in outcomes if got != row.expect]
    writes = {name: (before[name], after[name]) for name in B_QUEUES if before[name] != after[name]}
    print(f"walked {len(outcomes)} door/parameter rows as another team: {len(wrong)} not as expected, "
          f"{len(writes)} of B's queues changed")
    assert not wrong, "\n".join(wrong)
    assert not writes, f"cross-tenant writes: {writes}"
    with pytest.raises(ClientError, match=r"NonExistentQueue|QueueDoesNotExist"):  # refused: nothing made
        world.sqs("ops").get_queue_url(QueueName="a-new1")
    assert world.http("ops").get(f"{world.server.url}/queue/1/a-new4/_settings").status_code == 404


def test_the_refusals_use_each_doors_words(world: World) -> None:
    """AccessDenied names sqs:SendMessage on the second queue, before telling whether it exists."""
    sa = world.sqs("a")
    for target in ("b-dlq", "b-none"):
        with pytest.raises(ClientError) as e:
            sa.set_queue_attributes(QueueUrl=world.url("a-q"), Attributes={"RedrivePolicy": redrive(target)})
        assert e.value.response["Error"]["Code"] == "AccessDenied"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        assert e.value.response["Error"]["Message"] == (
            f"User: team-a is not authorized to perform: sqs:SendMessage on resource: {arn(target)}")
    r = world.http("a").post(f"{world.server.url}/console/api/queues/a-q/move", json={"to": "b-q"})
    assert r.status_code == 403 and r.json()["message"] == (
        "this key may not move messages into the EmoDB queue 'b-q' (that needs post)")
    # ops, who may post to both, may; and a dead-letter queue already set is not asked again when A
    # changes other settings, or writes the same RedrivePolicy again (as tools that apply every
    # attribute do)
    so = world.sqs("ops")
    so.create_queue(QueueName="a-ops-src")
    so.set_queue_attributes(QueueUrl=world.url("a-ops-src"), Attributes={"RedrivePolicy": redrive("b-dlq")})
    sa.set_queue_attributes(QueueUrl=world.url("a-ops-src"), Attributes={
        "DelaySeconds": "1", "RedrivePolicy": redrive("b-dlq")})
    ok(world.http("a").post(f"{world.server.url}/queue/1/{sqs_name('a-ops-src')}/_settings", json={"delay": 2}))
