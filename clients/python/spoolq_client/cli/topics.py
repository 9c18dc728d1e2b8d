"""The client commands on SNS topics: ``spoolq topics``, ``spoolq publish`` and ``spoolq subscribe``.

They speak SNS's own protocol (the Query protocol, as the AWS SDKs do) to the service's SNS door,
on the same URL as every other command (``--url`` or ``SPOOLQ_URL``). Where the service requires
credentials, requests are signed (SigV4, service ``sns``) with ``--access-key``/``--secret-key``,
else ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``; the region is ``--region``, else
``AWS_REGION``/``AWS_DEFAULT_REGION``, else the service's default. A topic is named by its name
(looked up in the region's topics) or its ARN; a queue by its SQS name (of the topic's account and
region) or its ARN.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import hmac
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import DEFAULT_URL, check_url, print_json

_NS = "{http://sns.amazonaws.com/doc/2010-03-31/}"


class Sns:
    """A few SNS calls over the Query protocol, signed when credentials are given."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.url = (args.url or os.environ.get("SPOOLQ_URL") or DEFAULT_URL).rstrip("/")
        check_url(self.url, "--url" if args.url else "SPOOLQ_URL")
        self.region = args.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        self.key = args.access_key or os.environ.get("AWS_ACCESS_KEY_ID")
        self.secret = args.secret_key or os.environ.get("AWS_SECRET_ACCESS_KEY")
        self.http = httpx.Client(timeout=args.timeout)

    def call(self, action: str, **params: str) -> ET.Element:
        body = urlencode({"Action": action, "Version": "2010-03-31", **params}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
        if self.key and self.secret:
            headers.update(self._sign(body))
        try:
            reply = self.http.post(self.url + "/", content=body, headers=headers)
        except httpx.ConnectError:
            raise CliError(f"cannot connect to {self.url} (connection refused?): is spoolq running there? "
                           "Set --url or SPOOLQ_URL") from None
        except httpx.HTTPError as e:
            raise CliError(f"HTTP error talking to {self.url}: {e}") from None
        try:
            root = ET.fromstring(reply.content)
        except ET.ParseError:
            raise CliError(f"{self.url} answered {reply.status_code} without SNS's XML: is it spoolq?") from None
        if reply.status_code != 200:
            code, message = root.findtext(f".//{_NS}Code"), root.findtext(f".//{_NS}Message")
            raise CliError(f"{action}: {code}: {message}")
        return root

    def _sign(self, body: bytes) -> dict[str, str]:
        assert self.key and self.secret
        now = datetime.datetime.now(datetime.UTC)
        stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        region = self.region or "us-east-1"
        parts = urlsplit(self.url)
        host, path = parts.netloc, quote(parts.path + "/", safe="/-_.~")  # the request goes to <url>/
        payload = hashlib.sha256(body).hexdigest()
        signed = "content-type;host;x-amz-date"
        canonical = "\n".join(["POST", path, "",
                               "content-type:application/x-www-form-urlencoded; charset=utf-8",
                               f"host:{host}", f"x-amz-date:{stamp}", "", signed, payload])
        scope = f"{day}/{region}/sns/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = f"AWS4{self.secret}".encode()
        for part in (day, region, "sns", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        return {"X-Amz-Date": stamp, "Authorization": f"AWS4-HMAC-SHA256 Credential={self.key}/{scope}, "
                                                      f"SignedHeaders={signed}, Signature={signature}"}

    def topic_arns(self) -> list[str]:
        arns: list[str] = []
        token: str | None = None
        while True:
            root = self.call("ListTopics", **({"NextToken": token} if token else {}))
            arns += [e.text or "" for e in root.iter(f"{_NS}TopicArn")]
            token = root.findtext(f".//{_NS}NextToken")
            if not token:
                return arns

    def topic_arn(self, name: str) -> str:
        if name.startswith("arn:"):
            return name
        for arn in self.topic_arns():
            if arn.rsplit(":", 1)[1] == name:
                return arn
        raise CliError(f"no topic {name} in this region (see `spoolq topics`)")

    def attributes(self, arn: str) -> dict[str, str]:
        root = self.call("GetTopicAttributes", TopicArn=arn)
        return {e.findtext(f"{_NS}key") or "": e.findtext(f"{_NS}value") or "" for e in root.iter(f"{_NS}entry")}


def _flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None, help=f"service URL (default: $SPOOLQ_URL or {DEFAULT_URL})")
    p.add_argument("--region", default=None, help="AWS region of the topics (default: $AWS_REGION, else the "
                                                  "service's default region)")
    p.add_argument("--access-key", dest="access_key", default=None, help="SigV4 access key id (default: "
                                                                         "$AWS_ACCESS_KEY_ID)")
    p.add_argument("--secret-key", dest="secret_key", default=None, help="SigV4 secret (default: "
                                                                        "$AWS_SECRET_ACCESS_KEY)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout (for scripts)")
    p.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds (default 60)")


def run_topics(args: argparse.Namespace) -> int:
    sns = Sns(args)
    rows: list[dict[str, Any]] = []
    for arn in sns.topic_arns():
        attributes = sns.attributes(arn)
        rows.append({"topic": arn.rsplit(":", 1)[1], "arn": arn, "fifo": attributes.get("FifoTopic") == "true",
                     "subscriptions": int(attributes.get("SubscriptionsConfirmed", "0"))})
    if args.json:
        print_json(rows)
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("topic", "kind", "subscriptions", "arn", box=None, header_style="bold")
    for row in rows:
        table.add_row(str(row["topic"]), "sns-fifo" if row["fifo"] else "sns", str(row["subscriptions"]),
                      str(row["arn"]))
    Console().print(table)
    return 0


def _attributes(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for i, pair in enumerate(pairs, 1):
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CliError(f"--attribute {pair!r}: give NAME=VALUE (NAME:Number=VALUE for a number)", 2)
        name, _, data_type = name.partition(":")
        params |= {f"MessageAttributes.entry.{i}.Name": name,
                   f"MessageAttributes.entry.{i}.Value.DataType": data_type or "String",
                   f"MessageAttributes.entry.{i}.Value.StringValue": value}
    return params


def run_publish(args: argparse.Namespace) -> int:
    attributes = _attributes(args.attribute)  # a usage mistake before any request
    sns = Sns(args)
    params: dict[str, str] = {"TopicArn": sns.topic_arn(args.topic), "Message": args.message, **attributes}
    for flag, name in ((args.subject, "Subject"), (args.group_id, "MessageGroupId"),
                       (args.dedup_id, "MessageDeduplicationId")):
        if flag is not None:
            params[name] = flag
    root = sns.call("Publish", **params)
    reply = {"message_id": root.findtext(f".//{_NS}MessageId"),
             "sequence_number": root.findtext(f".//{_NS}SequenceNumber")}
    print_json(reply) if args.json else print(reply["message_id"])
    return 0


def run_subscribe(args: argparse.Namespace) -> int:
    policy = _policy(args.filter_policy) if args.filter_policy else None  # a usage mistake before any request
    sns = Sns(args)
    topic = sns.topic_arn(args.topic)
    _arn, _aws, _sns, region, account, _name = topic.split(":", 5)
    queue = args.queue if args.queue.startswith("arn:") else f"arn:aws:sqs:{region}:{account}:{args.queue}"
    attributes: Mapping[str, str] = {
        **({"RawMessageDelivery": "true"} if args.raw else {}),
        **({"FilterPolicy": policy} if policy else {}),
        **({"FilterPolicyScope": "MessageBody"} if args.body else {})}
    params: dict[str, Any] = {"TopicArn": topic, "Protocol": "sqs", "Endpoint": queue}
    for i, (name, value) in enumerate(attributes.items(), 1):
        params |= {f"Attributes.entry.{i}.key": name, f"Attributes.entry.{i}.value": value}
    arn = sns.call("Subscribe", **params).findtext(f".//{_NS}SubscriptionArn")
    print_json({"subscription_arn": arn}) if args.json else print(arn)
    return 0


def _policy(text: str) -> str:
    try:
        json.loads(text)
    except ValueError as e:
        raise CliError(f"--filter-policy is not JSON: {e}", 2) from None
    return text


def _publish_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", help="the topic's name (in the region) or ARN")
    p.add_argument("message", help="the message")
    p.add_argument("--subject", default=None, help="the subject (shown in the notification's JSON)")
    p.add_argument("--attribute", action="append", default=[], metavar="NAME[:TYPE]=VALUE",
                   help="a message attribute (repeat the flag for more; TYPE String by default, or Number)")
    p.add_argument("--group-id", dest="group_id", default=None, help="MessageGroupId (FIFO topics)")
    p.add_argument("--dedup-id", dest="dedup_id", default=None, help="MessageDeduplicationId (FIFO topics)")
    _flags(p)


def _subscribe_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", help="the topic's name (in the region) or ARN")
    p.add_argument("queue", help="the SQS queue's name (of the topic's account and region) or ARN")
    p.add_argument("--raw", action="store_true", help="raw message delivery (no SNS envelope)")
    p.add_argument("--filter-policy", dest="filter_policy", default=None, help="the filter policy (JSON)")
    p.add_argument("--body", action="store_true", help="the filter policy applies to the message body")
    _flags(p)


TOPICS = Command("topics", "table of SNS topics (kind sns or sns-fifo) with their subscriptions", _flags, run_topics,
                 examples="""
spoolq topics
spoolq topics --region eu-west-1 --json""")
PUBLISH = Command("publish", "publish a message to an SNS topic (to every subscribed queue it matches)",
                  _publish_arguments, run_publish, examples="""
spoolq publish orders "a book was ordered" --attribute kind=book --attribute price:Number=12
spoolq publish orders.fifo "step 1" --group-id order-7 --dedup-id step-1""")
SUBSCRIBE = Command("subscribe", "subscribe an SQS queue to an SNS topic", _subscribe_arguments, run_subscribe,
                    examples="""
spoolq subscribe orders books --raw --filter-policy '{"kind": ["book"]}'
spoolq subscribe orders audit --filter-policy '{"order": {"total": [{"numeric": [">", 100]}]}}' --body""")
