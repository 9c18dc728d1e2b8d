"""The pytest plugin's server gives an SNS client beside the SQS one (spoolq.testing)."""

from __future__ import annotations

from typing import Any


def test_sns_client_fans_out_to_the_servers_queues(spoolq_server: Any) -> None:
    sns, sqs = spoolq_server.sns_client(), spoolq_server.sqs_client()
    assert spoolq_server.env["AWS_ENDPOINT_URL_SNS"] == spoolq_server.url
    topic = sns.create_topic(Name="events")["TopicArn"]
    assert topic == spoolq_server.topic_arn("events")
    urls = [sqs.create_queue(QueueName=name)["QueueUrl"] for name in ("a", "b")]
    for name in ("a", "b"):
        arn = f"arn:aws:sqs:{spoolq_server.region}:123456789012:{name}"
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn,
                      Attributes={"RawMessageDelivery": "true"})
    sns.publish(TopicArn=topic, Message="to both")
    for url in urls:
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"]
        assert [m["Body"] for m in got] == ["to both"]
