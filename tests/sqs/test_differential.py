"""Differential tests: each scenario runs against moto's in-process server and against a real
spoolq gunicorn (FileStore, fsync on); every observable field must agree except ids, receipt
handles, sequence numbers and timestamps. Where moto is known to differ from AWS, the step
is compared without the error wording (``message=False``) or checked in test_spoolq_only.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.sqs.conftest import Scenario, Transcript

pytestmark = pytest.mark.timeout(120)

Differential = Callable[[Scenario], None]

ATTRS = {"s": {"DataType": "String", "StringValue": "v"}, "n": {"DataType": "Number", "StringValue": "42"},
         "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
         "tag.one": {"DataType": "String.custom", "StringValue": "1"},
         "tag.two": {"DataType": "String", "StringValue": "2"}}


def _arn(name: str) -> str:
    return f"arn:aws:sqs:us-east-1:123456789012:{name}"


def _bodies(reply: Any) -> list[str]:
    return [m["Body"] for m in reply.get("Messages", [])] if isinstance(reply, dict) else []


def test_queue_lifecycle(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        name = t.name("std")
        url = t.call("create_queue", QueueName=name, Attributes={"VisibilityTimeout": "40", "DelaySeconds": "1",
                                                                  "MaximumMessageSize": "2048"},
                     tags={"team": "a", "env": "dev"})["QueueUrl"]
        t.call("create_queue", label="same again", QueueName=name, Attributes={"VisibilityTimeout": "40"})
        t.call("create_queue", label="different", QueueName=name, Attributes={"VisibilityTimeout": "41"})
        t.call("get_queue_url", QueueName=name)
        t.call("get_queue_url", label="missing", QueueName=t.name("nope"))
        t.call("get_queue_attributes", QueueUrl=url, AttributeNames=["All"])
        t.call("get_queue_attributes", label="some", QueueUrl=url,
               AttributeNames=["VisibilityTimeout", "QueueArn", "ApproximateNumberOfMessages"])
        t.call("get_queue_attributes", label="none", QueueUrl=url)
        t.call("get_queue_attributes", label="bogus", QueueUrl=url, AttributeNames=["Bogus"])
        t.call("set_queue_attributes", QueueUrl=url, Attributes={"VisibilityTimeout": "5",
                                                                 "MessageRetentionPeriod": "120",
                                                                 "ReceiveMessageWaitTimeSeconds": "2"})
        t.call("get_queue_attributes", label="after set", QueueUrl=url, AttributeNames=["All"])
        t.call("list_queue_tags", QueueUrl=url)
        t.call("tag_queue", QueueUrl=url, Tags={"team": "b", "new": "1"})
        t.call("list_queue_tags", label="tags after tag", QueueUrl=url)
        t.call("untag_queue", QueueUrl=url, TagKeys=["env", "absent"])
        t.call("list_queue_tags", label="tags after untag", QueueUrl=url)
        t.call("tag_queue", label="no tags", QueueUrl=url, Tags={})
        t.call("untag_queue", label="no keys", QueueUrl=url, TagKeys=[])
        t.call("create_queue", label="second", QueueName=t.name("std2"))
        t.call("list_queues", QueueNamePrefix=t.prefix)
        t.call("list_queues", label="prefix std2", QueueNamePrefix=t.name("std2"))
        t.call("list_queues", label="no match", QueueNamePrefix=t.name("zzz"))
        t.call("create_queue", label="bad name", QueueName="bad name!")
        t.call("delete_queue", QueueUrl=url)
        t.call("get_queue_url", label="deleted", QueueName=name)
        t.call("delete_queue", label="delete missing", QueueUrl=url)
        t.call("send_message", label="send to garbage url",
               QueueUrl="http://whatever-incorrect-queue-address", MessageBody="x")

    differential(scenario)


def test_fifo_queue_attributes_and_errors(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("f.fifo"),
                     Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "false"})["QueueUrl"]
        t.call("get_queue_attributes", QueueUrl=url, AttributeNames=["All"])
        # AWS: InvalidAttributeName "Unknown Attribute FifoQueue." (moto: InvalidParameterValue), see
        # test_spoolq_only.py
        t.call("create_queue", label="fifo without suffix", compare=False, QueueName=t.name("f"),
               Attributes={"FifoQueue": "true"})
        t.call("send_message", label="no group", QueueUrl=url, MessageBody="x")
        t.call("send_message", label="no dedup", QueueUrl=url, MessageBody="x", MessageGroupId="g")
        t.call("send_message", label="delay", QueueUrl=url, MessageBody="x", MessageGroupId="g",
               MessageDeduplicationId="d", DelaySeconds=5)

    differential(scenario)


def test_send_receive_attributes_and_md5(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("m"))["QueueUrl"]
        t.call("send_message", QueueUrl=url, MessageBody="hello world", MessageAttributes=ATTRS)
        got = t.call("receive_message", QueueUrl=url, MessageAttributeNames=["tag.*", "s"],
                     AttributeNames=["ApproximateReceiveCount", "SentTimestamp"], VisibilityTimeout=30)
        handle = got["Messages"][0]["ReceiptHandle"]
        t.call("receive_message", label="in flight", QueueUrl=url)
        t.call("change_message_visibility", QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0)
        got = t.call("receive_message", label="again", QueueUrl=url, MessageAttributeNames=["All"],
                     MessageSystemAttributeNames=["ApproximateReceiveCount", "SenderId"])
        t.call("delete_message", QueueUrl=url, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])
        t.call("receive_message", label="empty", QueueUrl=url)
        t.call("send_message", label="unicode", QueueUrl=url, MessageBody="h\u00e9llo \U0001f600 \t\n",
               MessageAttributes={"k": {"DataType": "String", "StringValue": "x"}})
        t.call("receive_message", label="unicode back", QueueUrl=url, MessageAttributeNames=[".*"])
        t.call("get_queue_attributes", QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                                                     "ApproximateNumberOfMessagesNotVisible"])

    differential(scenario)


def test_limits_and_errors(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("lim"))["QueueUrl"]
        t.call("send_message", label="delay 901", QueueUrl=url, MessageBody="x", DelaySeconds=901)
        t.call("send_message", label="1 MiB + 1", QueueUrl=url, MessageBody="x" * (1_048_576 + 1))
        t.call("send_message", label="1 MiB", QueueUrl=url, MessageBody="y" * 1_048_576)
        t.call("receive_message", label="max 11", message=False, QueueUrl=url, MaxNumberOfMessages=11)
        t.call("receive_message", label="max 0", message=False, QueueUrl=url, MaxNumberOfMessages=0)
        t.call("receive_message", label="wait 21", message=False, QueueUrl=url, WaitTimeSeconds=21)
        t.call("receive_message", label="visibility 43201", message=False, QueueUrl=url,
               VisibilityTimeout=43_201)
        # moto words it "The input receipt handle is invalid."; AWS's wording (it names the handle) is
        # checked in test_aws_recorded.py
        t.call("delete_message", label="bad handle", message=False, QueueUrl=url, ReceiptHandle="garbage")
        t.call("change_message_visibility", label="bad handle cmv", QueueUrl=url, ReceiptHandle="garbage",
               VisibilityTimeout=3)
        t.call("send_message", label="bad attribute type", QueueUrl=url, MessageBody="x",
               MessageAttributes={"a": {"DataType": "Float", "StringValue": "1"}})
        t.call("purge_queue", QueueUrl=url)
        t.call("purge_queue", label="purge again", QueueUrl=url)

    differential(scenario)


def test_batches_and_partial_failures(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("b"))["QueueUrl"]
        t.call("send_message_batch", label="empty", QueueUrl=url, Entries=[])
        t.call("send_message_batch", label="eleven", QueueUrl=url,
               Entries=[{"Id": f"e{i}", "MessageBody": "x"} for i in range(11)])
        t.call("send_message_batch", label="repeated", QueueUrl=url,
               Entries=[{"Id": "a", "MessageBody": "x"}, {"Id": "a", "MessageBody": "y"}])
        t.call("send_message_batch", label="bad id", QueueUrl=url, Entries=[{"Id": "a b", "MessageBody": "x"}])
        t.call("send_message_batch", label="too long", QueueUrl=url,
               Entries=[{"Id": "a", "MessageBody": "x" * 600_000}, {"Id": "b", "MessageBody": "y" * 600_000}])
        t.call("send_message_batch", label="partial", QueueUrl=url, Entries=[
            {"Id": "ok1", "MessageBody": "one", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}},
            {"Id": "late", "MessageBody": "bad", "DelaySeconds": 901},
            {"Id": "ok2", "MessageBody": "two"}])
        got = t.call("receive_message", QueueUrl=url, MaxNumberOfMessages=10, compare=False)
        msgs = sorted(got.get("Messages", []), key=lambda m: m["Body"])
        t.record("received", [m["Body"] for m in msgs])
        t.call("delete_message_batch", label="delete empty", QueueUrl=url, Entries=[])
        t.call("delete_message_batch", QueueUrl=url, Entries=[
            {"Id": "x", "ReceiptHandle": msgs[0]["ReceiptHandle"]}, {"Id": "bad", "ReceiptHandle": "garbage"}])
        t.call("change_message_visibility_batch", QueueUrl=url, Entries=[
            {"Id": "y", "ReceiptHandle": msgs[1]["ReceiptHandle"], "VisibilityTimeout": 0}])
        got = t.call("receive_message", label="after cmv batch", QueueUrl=url, MaxNumberOfMessages=10)
        t.call("delete_message_batch", label="delete rest", QueueUrl=url,
               Entries=[{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got["Messages"])])
        t.call("get_queue_attributes", QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                                                     "ApproximateNumberOfMessagesNotVisible"])

    differential(scenario)


def test_fifo_order_dedup_and_group_blocking(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("o.fifo"), Attributes={"FifoQueue": "true"})["QueueUrl"]
        for i in range(3):
            t.call("send_message", QueueUrl=url, MessageBody=f"a{i}", MessageGroupId="A",
                   MessageDeduplicationId=f"a{i}")
        t.call("send_message", label="duplicate", QueueUrl=url, MessageBody="a0 again", MessageGroupId="A",
               MessageDeduplicationId="a0")
        t.call("send_message_batch", QueueUrl=url, Entries=[
            {"Id": f"b{i}", "MessageBody": f"b{i}", "MessageGroupId": "B", "MessageDeduplicationId": f"b{i}"}
            for i in range(2)])
        first = t.call("receive_message", QueueUrl=url, MaxNumberOfMessages=1,
                       AttributeNames=["MessageGroupId", "MessageDeduplicationId"])
        group = first["Messages"][0]["Attributes"]["MessageGroupId"]
        second = t.call("receive_message", label="other group", compare=False, QueueUrl=url, MaxNumberOfMessages=1,
                        AttributeNames=["MessageGroupId"])
        t.record("second group differs", [m["Attributes"]["MessageGroupId"] != group for m in second["Messages"]])
        t.call("receive_message", label="both groups in flight", QueueUrl=url, MaxNumberOfMessages=10)
        for reply in (first, second):
            t.call("delete_message", QueueUrl=url, ReceiptHandle=reply["Messages"][0]["ReceiptHandle"])
        rest: list[str] = []
        for _ in range(6):
            got = t.call("receive_message", compare=False, QueueUrl=url, MaxNumberOfMessages=10)
            for m in got.get("Messages", []):
                rest.append(m["Body"])
                t.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        t.record("rest per group", sorted(rest))
        t.record("order within A", [b for b in rest if b.startswith("a")])

    differential(scenario)


def test_fifo_ordering_under_concurrency(differential: Differential) -> None:
    groups, per_group = 4, 12

    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("c.fifo"),
                     Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]

        def produce(g: int) -> None:
            sqs = type(t)(t.side, t.url, t.prefix).sqs
            for i in range(0, per_group, 3):
                sqs.send_message_batch(QueueUrl=url, Entries=[
                    {"Id": f"m{j}", "MessageBody": f"g{g}-{j:03d}", "MessageGroupId": f"g{g}"}
                    for j in range(i, i + 3)])

        threads = [threading.Thread(target=produce, args=(g,)) for g in range(groups)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        seen: dict[str, list[str]] = {}
        deadline = time.monotonic() + 60
        while sum(map(len, seen.values())) < groups * per_group and time.monotonic() < deadline:
            got = t.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["MessageGroupId"])
            msgs = got.get("Messages", [])
            for m in msgs:
                seen.setdefault(m["Attributes"]["MessageGroupId"], []).append(m["Body"])
            if msgs:
                t.sqs.delete_message_batch(QueueUrl=url, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)])
        t.record("per-group order", {g: seen.get(g) for g in sorted(seen)})
        t.record("in order", all(v == sorted(v) for v in seen.values()))

    differential(scenario)


def test_dead_letter_redrive(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        dlq = t.call("create_queue", QueueName=t.name("dlq"))["QueueUrl"]
        policy = f'{{"deadLetterTargetArn": "{_arn(t.name("dlq"))}", "maxReceiveCount": 2}}'
        src = t.call("create_queue", QueueName=t.name("src"), Attributes={"RedrivePolicy": policy})["QueueUrl"]
        t.call("get_queue_attributes", QueueUrl=src, AttributeNames=["RedrivePolicy"])
        t.call("list_dead_letter_source_queues", QueueUrl=dlq)
        t.call("set_queue_attributes", label="missing dlq", QueueUrl=src, Attributes={
            "RedrivePolicy": f'{{"deadLetterTargetArn": "{_arn(t.name("gone"))}", "maxReceiveCount": 2}}'})
        t.call("send_message", QueueUrl=src, MessageBody="poison")
        for i in range(2):
            got = t.call("receive_message", label=f"receive {i}", QueueUrl=src,
                         AttributeNames=["ApproximateReceiveCount"])
            t.call("change_message_visibility", QueueUrl=src, ReceiptHandle=got["Messages"][0]["ReceiptHandle"],
                   VisibilityTimeout=0)
        t.call("receive_message", label="moved", QueueUrl=src)
        t.call("receive_message", label="in dlq", QueueUrl=dlq, WaitTimeSeconds=2)

    differential(scenario)


def test_long_poll_wakes_on_send(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("lp"))["QueueUrl"]
        sender = type(t)(t.side, t.url, t.prefix).sqs
        timer = threading.Timer(1.0, lambda: sender.send_message(QueueUrl=url, MessageBody="wake"))
        started = time.monotonic()
        timer.start()
        got = t.call("receive_message", QueueUrl=url, WaitTimeSeconds=15)
        elapsed = time.monotonic() - started
        timer.join()
        t.record("woke early", 0.8 < elapsed < 6.0)
        t.record("bodies", _bodies(got))
        started = time.monotonic()
        t.call("receive_message", label="times out", QueueUrl=url, WaitTimeSeconds=1)
        t.record("waited", 0.8 < time.monotonic() - started < 4.0)

    differential(scenario)


def test_delay_queue(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("d"), Attributes={"DelaySeconds": "2"})["QueueUrl"]
        t.call("send_message", QueueUrl=url, MessageBody="later")
        t.call("send_message", label="override to 0", QueueUrl=url, MessageBody="now", DelaySeconds=0)
        t.call("receive_message", QueueUrl=url, MaxNumberOfMessages=10)
        t.call("get_queue_attributes", QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
        got = t.call("receive_message", compare=False, QueueUrl=url, WaitTimeSeconds=6)
        t.record("delayed arrives", _bodies(got))

    differential(scenario)


def test_permissions_policy(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("p"))["QueueUrl"]
        t.call("add_permission", QueueUrl=url, Label="one", AWSAccountIds=["111111111111"], Actions=["SendMessage"])
        t.call("add_permission", label="two", QueueUrl=url, Label="two",
               AWSAccountIds=["111111111111", "222222222222"], Actions=["ReceiveMessage", "DeleteMessage"])
        t.call("add_permission", label="dup", QueueUrl=url, Label="one", AWSAccountIds=["111111111111"],
               Actions=["SendMessage"])
        t.call("add_permission", label="bad action", QueueUrl=url, Label="three", AWSAccountIds=["111111111111"],
               Actions=["CreateQueue"])
        t.call("add_permission", label="too many", QueueUrl=url, Label="four", AWSAccountIds=["111111111111"],
               Actions=["SendMessage"] * 8)
        t.call("get_queue_attributes", QueueUrl=url, AttributeNames=["Policy"])
        t.call("remove_permission", QueueUrl=url, Label="one")
        t.call("remove_permission", label="missing label", QueueUrl=url, Label="one")
        t.call("get_queue_attributes", label="after remove", QueueUrl=url, AttributeNames=["Policy"])

    differential(scenario)


def test_queue_resolved_before_receipt_handle(differential: Differential) -> None:
    """A missing queue is reported as such, whatever the receipt handle looks like."""

    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("real"))["QueueUrl"]
        gone = url.replace(t.name("real"), t.name("gone"))
        t.call("delete_message", QueueUrl=gone, ReceiptHandle="garbage")
        t.call("delete_message_batch", QueueUrl=gone, Entries=[{"Id": "a", "ReceiptHandle": "garbage"}])
        t.call("change_message_visibility", QueueUrl=gone, ReceiptHandle="garbage", VisibilityTimeout=1)
        t.call("change_message_visibility_batch", QueueUrl=gone,
               Entries=[{"Id": "a", "ReceiptHandle": "garbage", "VisibilityTimeout": 1}])

    differential(scenario)


def test_attribute_name_prefix_wildcard(differential: Differential) -> None:
    """``Custom.*`` selects every attribute whose name starts with ``Custom``."""

    def scenario(t: Transcript) -> None:
        url = t.call("create_queue", QueueName=t.name("wild"))["QueueUrl"]
        t.call("send_message", QueueUrl=url, MessageBody="x", MessageAttributes={
            n: {"DataType": "String", "StringValue": n} for n in ("Custom1", "Custom.x", "Customer", "Other")})
        t.call("receive_message", QueueUrl=url, MessageAttributeNames=["Custom.*"], VisibilityTimeout=0)
        t.call("receive_message", label="exact and prefix", QueueUrl=url,
               MessageAttributeNames=["Other", "Custom.x.*"], VisibilityTimeout=0)

    differential(scenario)


def test_empty_queue_name_and_fifo_batch_without_dedup_id(differential: Differential) -> None:
    def scenario(t: Transcript) -> None:
        t.call("create_queue", label="empty name", QueueName="")
        url = t.call("create_queue", QueueName=t.name("f.fifo"), Attributes={"FifoQueue": "true"})["QueueUrl"]
        t.call("send_message_batch", label="no dedup id", QueueUrl=url, Entries=[
            {"Id": "a", "MessageBody": "x", "MessageGroupId": "g", "MessageDeduplicationId": "d"},
            {"Id": "b", "MessageBody": "y", "MessageGroupId": "g"}])
        t.call("get_queue_attributes", QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])

    differential(scenario)
