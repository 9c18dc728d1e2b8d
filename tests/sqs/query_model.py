"""A boto3 SQS client that speaks the Query protocol, as older SDKs (and the AWS-recorded suites'
``sqs_query`` clients) do.

botocore dropped SQS's Query model when SQS moved to JSON; the JSON model it ships still has every
shape, and most lists and maps are still marked ``flattened``. What the Query serializer and parser
also need is the wire name of each flattened member (``AttributeName.1``, ``<Attribute><Name>``)
and the ``<Action>Result`` wrapper of each reply. :func:`query_model` adds exactly those to a copy
of the installed model; :func:`query_client` loads it through a botocore loader search path, so the
client is real boto3: its own serializer, signer and Query error parser.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
from botocore.config import Config

#: request/response structure member -> wire name of one item (flattened list or map)
MEMBER_NAMES = {
    "AttributeNames": "AttributeName", "MessageAttributeNames": "MessageAttributeName",
    "MessageSystemAttributeNames": "MessageSystemAttributeName", "TagKeys": "TagKey",
    "AWSAccountIds": "AWSAccountId", "Actions": "ActionName", "Attributes": "Attribute", "Tags": "Tag", "tags": "Tag",
    "MessageAttributes": "MessageAttribute", "MessageSystemAttributes": "MessageSystemAttribute",
    "QueueUrls": "QueueUrl", "queueUrls": "QueueUrl", "Messages": "Message",
    "Failed": "BatchResultErrorEntry", "Results": "ListMessageMoveTasksResultEntry",
    "StringListValues": "StringListValue", "BinaryListValues": "BinaryListValue",
}
#: batch entry lists are named after their entry shape
ENTRY_LISTS = {"SendMessageBatchRequestEntryList", "DeleteMessageBatchRequestEntryList",
               "ChangeMessageVisibilityBatchRequestEntryList", "SendMessageBatchResultEntryList",
               "DeleteMessageBatchResultEntryList", "ChangeMessageVisibilityBatchResultEntryList"}


def query_model(json_model: dict[str, Any]) -> dict[str, Any]:
    """The Query-protocol form of botocore's SQS JSON model."""
    model = copy.deepcopy(json_model)
    model["metadata"].update(protocol="query", protocols=["query"], xmlNamespace="http://queue.amazonaws.com/doc/2012-11-05/")
    for key in ("jsonVersion", "targetPrefix", "awsQueryCompatible"):
        model["metadata"].pop(key, None)
    shapes = model["shapes"]
    for op in model["operations"].values():
        if "output" in op:
            op["output"]["resultWrapper"] = f"{op['name']}Result"
    for shape in shapes.values():
        if shape["type"] != "structure":
            continue
        for member_name, member in shape.get("members", {}).items():
            target = shapes[member["shape"]]
            if target["type"] == "list" and target["member"]["shape"] + "List" in ENTRY_LISTS:
                target["member"]["locationName"] = target["member"]["shape"]
                target["flattened"] = True
            elif member_name in MEMBER_NAMES and target["type"] in ("list", "map"):
                member["locationName"] = MEMBER_NAMES[member_name]
                member["flattened"] = True
                if target["type"] == "list":
                    target["member"]["locationName"] = MEMBER_NAMES[member_name]
                    target["flattened"] = True
                else:
                    target["flattened"] = True
                    key, value = ("Key", "Value") if member_name in ("Tags", "tags") else ("Name", "Value")
                    target["key"]["locationName"] = key
                    target["value"]["locationName"] = value
    return model


def _data_dir(cache: Path) -> Path:
    root = cache / "sqs-query-model"
    target = root / "sqs" / "2012-11-05" / "service-2.json"
    if not target.exists():
        loader = botocore.loaders.Loader()
        json_model = loader.load_service_model("sqs", "service-2", "2012-11-05")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(query_model(json_model)))
        tmp.replace(target)
    return root


def query_client(endpoint_url: str, cache: Path, region: str, access_key: str, secret_key: str,
                 config: Config) -> Any:
    """A boto3 SQS client whose model is the Query one (``cache``: where the model file is kept)."""
    session = boto3.Session(aws_access_key_id=access_key, aws_secret_access_key=secret_key, region_name=region)
    session._loader.search_paths.insert(0, str(_data_dir(cache)))  # type: ignore[attr-defined]
    return session.client("sqs", endpoint_url=endpoint_url, config=config)
