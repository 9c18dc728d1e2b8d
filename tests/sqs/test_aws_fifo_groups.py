"""FIFO message groups as AWS delivers them, checked against answers recorded from real AWS
(LocalStack's AWS-validated ``tests/aws/services/sqs/test_sqs.py``; each test names the one it
follows), through boto3 in both protocols against the session's gunicorn.

AWS delivers a group's messages in order from its head while they are visible: the group is
blocked from its first message in flight on, and a message whose visibility ends (or is set to
0) is delivered again before the messages after it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(120)


def _fifo(sqs: Any, name: str, **attributes: str) -> str:
    return str(sqs.create_queue(QueueName=f"{name}.fifo", Attributes={"FifoQueue": "true", **attributes})["QueueUrl"])


def _send(sqs: Any, url: str, *messages: tuple[str, str]) -> None:
    for body, group in messages:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)


def _bodies(reply: dict[str, Any]) -> list[str]:
    return [m["Body"] for m in reply.get("Messages", [])]


def test_group_is_blocked_while_its_head_is_in_flight(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_message_group_visibility_after_delete / _after_partial_delete
    for delete_both in (True, False):
        url = _fifo(aws_sqs, qname(f"d{int(delete_both)}"), ContentBasedDeduplication="true")
        _send(aws_sqs, url, ("g1-m1", "group-1"), ("g2-m1", "group-2"), ("g1-m2", "group-1"), ("g2-m2", "group-2"),
              ("g1-m2", "group-1"), ("g1-m3", "group-1"), ("g1-m4", "group-1"), ("g3-m1", "group-3"))
        got = aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)["Messages"]
        assert [m["Body"] for m in got] == ["g1-m1", "g1-m2"]
        for m in got if delete_both else got[:1]:
            aws_sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        drained = _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10))
        if delete_both:
            assert drained in (["g2-m1", "g2-m2", "g1-m3", "g1-m4", "g3-m1"],
                               ["g2-m1", "g2-m2", "g3-m1", "g1-m3", "g1-m4"]), drained
        else:
            assert drained == ["g2-m1", "g2-m2", "g3-m1"]


def test_group_visible_again_after_terminating_one_visibility(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_message_group_visibility_after_terminate_visibility_timeout
    url = _fifo(aws_sqs, qname(), VisibilityTimeout="30", ContentBasedDeduplication="true")
    _send(aws_sqs, url, ("g1-m1", "group-1"), ("g1-m2", "group-1"), ("g2-m1", "group-2"))
    got = aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)["Messages"]
    assert [m["Body"] for m in got] == ["g1-m1", "g1-m2"]
    aws_sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=0)
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, WaitTimeSeconds=2)) == \
        ["g2-m1", "g1-m1"]


def test_group_visible_again_after_a_changed_visibility_ends(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_message_group_visibility_after_change_message_visibility
    url = _fifo(aws_sqs, qname(), VisibilityTimeout="30", ContentBasedDeduplication="true")
    _send(aws_sqs, url, ("g1-m1", "group-1"), ("g1-m2", "group-1"), ("g2-m1", "group-2"))
    got = aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)["Messages"]
    aws_sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=1)
    time.sleep(2)
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)) == ["g2-m1", "g1-m1"]


@pytest.mark.parametrize("position", [0, 1, 2])
def test_group_blocked_from_the_extended_message_on(aws_sqs: Any, qname: Callable[[str], str], position: int) -> None:
    # test_fifo_group_visibility_extends_with_change_message_visibility[0-visible, 1-visible, 2-visible]
    url = _fifo(aws_sqs, qname(), VisibilityTimeout="1")
    for body in ("foo", "bar", "baz"):
        aws_sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="1", MessageDeduplicationId=body)
    got = aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=5)["Messages"]
    assert [m["Body"] for m in got] == ["foo", "bar", "baz"]
    aws_sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=got[position]["ReceiptHandle"], VisibilityTimeout=4)
    time.sleep(2.5)
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=5)) == ["foo", "bar", "baz"][:position]


def test_messages_in_order_after_timeout(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_messages_in_order_after_timeout
    url = _fifo(aws_sqs, qname(), VisibilityTimeout="1")
    for i in range(3):
        aws_sqs.send_message(QueueUrl=url, MessageBody=f"message-{i}", MessageGroupId="1", MessageDeduplicationId=f"{i}")
    for _ in range(2):
        assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)) == \
            ["message-0", "message-1", "message-2"]
        time.sleep(2)


def test_groups_released_go_behind_groups_not_received(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_receive_message_with_zero_visibility_timeout
    url = _fifo(aws_sqs, qname(), ContentBasedDeduplication="true")
    _send(aws_sqs, url, ("g1-m1", "group-1"), ("g2-m1", "group-2"), ("g2-m2", "group-2"), ("g3-m1", "group-3"),
          ("g1-m2", "group-1"))
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, VisibilityTimeout=0)) == \
        ["g1-m1", "g1-m2", "g2-m1"]
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)) == \
        ["g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2"]


def test_group_visibility_is_shared_and_groups_expire_behind(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_receive_message_visibility_timeout_shared_in_group
    url = _fifo(aws_sqs, qname(), VisibilityTimeout="1", ContentBasedDeduplication="true")
    _send(aws_sqs, url, ("g1-m1", "group-1"), ("g1-m2", "group-1"), ("g1-m3", "group-1"), ("g1-m4", "group-1"),
          ("g2-m1", "group-2"), ("g3-m1", "group-3"))
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)) == ["g1-m1", "g1-m2"]
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)) == ["g2-m1"]
    time.sleep(2)
    assert _bodies(aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)) in (
        ["g3-m1", "g1-m1", "g1-m2", "g1-m3", "g1-m4", "g2-m1"], ["g3-m1", "g2-m1", "g1-m1", "g1-m2", "g1-m3", "g1-m4"])


def test_an_emptied_group_takes_new_messages(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_empty_message_groups_added_back_to_queue
    url = _fifo(aws_sqs, qname())
    aws_sqs.send_message(QueueUrl=url, MessageBody="Message 1", MessageGroupId="g1", MessageDeduplicationId="1")
    got = aws_sqs.receive_message(QueueUrl=url)["Messages"]
    aws_sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
    assert _bodies(aws_sqs.receive_message(QueueUrl=url)) == []
    aws_sqs.send_message(QueueUrl=url, MessageBody="Message 2", MessageGroupId="g1", MessageDeduplicationId="2")
    assert _bodies(aws_sqs.receive_message(QueueUrl=url)) == ["Message 2"]
