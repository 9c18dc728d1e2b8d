"""SNS under the one permission model: SigV4 with scope sns, topic permissions, and the queue's
``post`` for a subscription that delivers to it (a setting that names a second queue)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError

from spoolq.access.auth import Permission
from spoolq.settings.server import SettingsError
from tests.sns.conftest import sns_client, sqs_client
from tests.sqs.harness import SpoolqProcess

CONFIG = """
api_keys:
  - name: admin
    sqs_credentials: [{access_key_id: AKIDADMIN, secret_access_key: admin-secret}]
    permissions: ["*"]
  - name: publisher
    sqs_credentials: [{access_key_id: AKIDPUB, secret_access_key: pub-secret}]
    permissions: ["topic|publish,get_status|sns:*:*:orders*"]
  - name: subscriber
    sqs_credentials: [{access_key_id: AKIDSUB, secret_access_key: sub-secret}]
    permissions: ["topic|subscribe,get_status", "queue|post|sqs:*:*:mine"]
  - name: queues-only
    sqs_credentials: [{access_key_id: AKIDQ, secret_access_key: q-secret}]
    permissions: ["queue"]
  - name: console-user
    key: console-key
    permissions: ["topic|publish,get_status|sns:*:*:orders", "queue|get_status"]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpoolqProcess]:
    base = tmp_path_factory.mktemp("sns-auth")
    (base / "root").mkdir()
    config = base / "config.yaml"
    config.write_text(CONFIG)
    process = SpoolqProcess(base / "root", workers=1, threads=8, config=config)
    process.start()
    yield process
    process.stop()


def code(call: Any, **kwargs: Any) -> str:
    with pytest.raises(ClientError) as e:
        call(**kwargs)
    return str(e.value.response["Error"]["Code"])


def test_permissions(server: SpoolqProcess) -> None:
    admin, admin_sqs = sns_client(server.url, "AKIDADMIN", "admin-secret"), sqs_client(server.url, "AKIDADMIN",
                                                                                          "admin-secret")
    orders = admin.create_topic(Name="orders")["TopicArn"]
    other = admin.create_topic(Name="other")["TopicArn"]
    for queue in ("mine", "victim"):
        admin_sqs.create_queue(QueueName=queue)
    publisher = sns_client(server.url, "AKIDPUB", "pub-secret")
    publisher.publish(TopicArn=orders, Message="m")
    assert code(publisher.publish, TopicArn=other, Message="m") == "AuthorizationError"
    assert code(publisher.create_topic, Name="orders-new") == "AuthorizationError"
    assert [t["TopicArn"] for t in publisher.list_topics()["Topics"]] == [orders]  # only what it may see
    subscriber = sns_client(server.url, "AKIDSUB", "sub-secret")
    mine = "arn:aws:sqs:us-east-1:123456789012:mine"
    victim = "arn:aws:sqs:us-east-1:123456789012:victim"
    subscriber.subscribe(TopicArn=orders, Protocol="sqs", Endpoint=mine)
    assert code(subscriber.subscribe, TopicArn=orders, Protocol="sqs", Endpoint=victim) == "AuthorizationError"
    assert code(subscriber.publish, TopicArn=orders, Message="m") == "AuthorizationError"
    queues_only = sns_client(server.url, "AKIDQ", "q-secret")
    assert code(queues_only.get_topic_attributes, TopicArn=orders) == "AuthorizationError"
    assert queues_only.list_topics()["Topics"] == []


def test_signatures(server: SpoolqProcess) -> None:
    assert code(sns_client(server.url, "AKIDADMIN", "wrong").list_topics) == "SignatureDoesNotMatch"
    assert code(sns_client(server.url, "AKIDNOBODY", "x").list_topics) == "InvalidClientTokenId"
    unsigned = requests.post(server.url, data={"Action": "ListTopics", "Version": "2010-03-31"}, timeout=10)
    assert unsigned.status_code == 403 and "MissingAuthenticationToken" in unsigned.text


def test_permission_grammar() -> None:
    assert Permission.parse("topic|publish|sns:*:*:orders").implies(("topic", "publish", "sns:1:r:orders"))
    assert not Permission.parse("queue").implies(("topic", "publish", "sns:1:r:orders"))
    assert Permission.parse("*").implies(("topic", "admin", "sns:1:r:orders"))
    with pytest.raises(SettingsError, match="unknown action 'poll'"):
        Permission.parse("topic|poll")
    with pytest.raises(SettingsError, match="unknown action 'publish'"):
        Permission.parse("queue|publish")


def test_config_with_topic_permissions_checks(tmp_path: Path) -> None:
    from spoolq.access.auth import Authenticator

    auth = Authenticator.from_config({"api_keys": [{"name": "n", "key": "k", "permissions": ["topic|admin"]}]})
    principal = auth.principal("k", None)
    assert principal is not None and principal.can("admin", "sns:1:r:t", "topic")
    assert not principal.can("admin", "sns:1:r:t")  # a queue of that name: no


def test_api_key_publishes_as_the_console_does(server: SpoolqProcess) -> None:
    """An unsigned request naming an API key in X-BV-API-Key (the console's publish form) acts as
    that key's identity, with its topic permissions; JSON replies where Accept asks for them."""
    admin = sns_client(server.url, "AKIDADMIN", "admin-secret")
    orders = admin.create_topic(Name="orders")["TopicArn"]
    other = admin.create_topic(Name="other")["TopicArn"]

    def publish(key: str, topic: str) -> requests.Response:
        return requests.post(server.url, data={"Action": "Publish", "TopicArn": topic, "Message": "m"},
                             headers={"X-BV-API-Key": key, "Accept": "application/json"}, timeout=10)

    ok = publish("console-key", orders)
    assert ok.status_code == 200 and ok.json()["PublishResponse"]["PublishResult"]["MessageId"]
    refused = publish("console-key", other)
    assert refused.status_code == 403 and refused.json()["Error"]["Code"] == "AuthorizationError"
    unknown = publish("no-such-key", orders)
    assert unknown.status_code == 403 and unknown.json()["Error"]["Code"] == "InvalidClientTokenId"
