"""Filter policies (http/sns/filter_policy.py): every operator, both scopes, AWS's limits and wording."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spoolq.topics.filter_policy import ATTRIBUTES, BODY, PolicyError, compile_policy


def attrs(**values: Any) -> dict[str, tuple[str, str]]:
    """Message attributes: str -> String, int/float -> Number, list -> String.Array, bytes -> Binary."""
    out = {}
    for name, value in values.items():
        if isinstance(value, bool):
            out[name] = ("String", str(value).lower())
        elif isinstance(value, (int, float)):
            out[name] = ("Number", str(value))
        elif isinstance(value, list):
            out[name] = ("String.Array", json.dumps(value))
        elif isinstance(value, bytes):
            out[name] = ("Binary", "AA==")
        else:
            out[name] = ("String", value)
    return out


def on_attributes(policy: dict[str, Any], **values: Any) -> bool:
    return compile_policy(json.dumps(policy), ATTRIBUTES).matches(attrs(**values), None)


def on_body(policy: dict[str, Any], body: Any) -> bool:
    text = body if isinstance(body, str) else json.dumps(body)
    return compile_policy(json.dumps(policy), BODY).matches({}, text)


def refused(policy: Any, scope: str = ATTRIBUTES) -> str:
    with pytest.raises(PolicyError) as e:
        compile_policy(policy if isinstance(policy, str) else json.dumps(policy), scope)
    return e.value.message


@pytest.mark.parametrize(("policy", "values", "expected"), [
    ({"color": ["red"]}, {"color": "red"}, True),
    ({"color": ["red"]}, {"color": "blue"}, False),
    ({"color": ["red"]}, {}, False),
    ({"color": ["red", "blue"]}, {"color": "blue"}, True),
    ({"size": [5]}, {"size": 5.0}, True),
    ({"size": [5]}, {"size": "5"}, False),  # a String attribute is no number
    ({"color": ["red"]}, {"color": ["green", "red"]}, True),  # String.Array: any element
    ({"color": [{"prefix": "re"}]}, {"color": "red"}, True),
    ({"color": [{"prefix": "re"}]}, {"color": "bred"}, False),
    ({"file": [{"suffix": ".png"}]}, {"file": "a.png"}, True),
    ({"file": [{"suffix": ".png"}]}, {"file": "a.jpg"}, False),
    ({"color": [{"equals-ignore-case": "RED"}]}, {"color": "rEd"}, True),
    ({"color": [{"anything-but": "red"}]}, {"color": "blue"}, True),
    ({"color": [{"anything-but": "red"}]}, {"color": "red"}, False),
    ({"color": [{"anything-but": "red"}]}, {}, False),  # anything-but needs the key
    ({"color": [{"anything-but": ["red", "blue"]}]}, {"color": "blue"}, False),
    ({"size": [{"anything-but": [1, 2]}]}, {"size": 3}, True),
    ({"size": [{"anything-but": [1, 2]}]}, {"size": 2}, False),
    ({"color": [{"anything-but": {"prefix": "re"}}]}, {"color": "red"}, False),
    ({"color": [{"anything-but": {"prefix": "re"}}]}, {"color": "blue"}, True),
    ({"file": [{"anything-but": {"suffix": ".tmp"}}]}, {"file": "a.tmp"}, False),
    ({"file": [{"anything-but": {"suffix": ".tmp"}}]}, {"file": "a.txt"}, True),
    ({"color": [{"anything-but": {"equals-ignore-case": "RED"}}]}, {"color": "red"}, False),
    ({"price": [{"numeric": [">", 0, "<=", 5]}]}, {"price": 5}, True),
    ({"price": [{"numeric": [">", 0, "<=", 5]}]}, {"price": 0}, False),
    ({"price": [{"numeric": [">=", 0, "<", 5]}]}, {"price": 5}, False),
    ({"price": [{"numeric": ["=", 3.5]}]}, {"price": 3.5}, True),
    ({"price": [{"numeric": ["<", 10]}]}, {"price": "3"}, False),
    ({"price": [{"exists": True}]}, {"price": 1}, True),
    ({"price": [{"exists": True}]}, {}, False),
    ({"price": [{"exists": False}]}, {}, True),
    ({"price": [{"exists": False}]}, {"price": 1}, False),
    ({"blob": [{"exists": True}]}, {"blob": b"x"}, True),  # Binary: exists, nothing to compare
    ({"ip": [{"cidr": "10.0.0.0/24"}]}, {"ip": "10.0.0.255"}, True),
    ({"ip": [{"cidr": "10.0.0.0/24"}]}, {"ip": "10.0.1.1"}, False),
    ({"ip": [{"cidr": "2001:db8::/32"}]}, {"ip": "2001:db8::1"}, True),
    ({"ip": [{"cidr": "10.0.0.0/24"}]}, {"ip": "not an ip"}, False),
    ({"a": ["1"], "b": ["2"]}, {"a": "1", "b": "2"}, True),
    ({"a": ["1"], "b": ["2"]}, {"a": "1"}, False),
    ({"a": ["1"], "$or": [{"b": ["2"]}, {"c": ["3"]}]}, {"a": "1", "c": "3"}, True),
    ({"a": ["1"], "$or": [{"b": ["2"]}, {"c": ["3"]}]}, {"a": "1", "c": "4"}, False),
    ({"$or": [{"b": ["2"]}, {"$or": [{"c": ["3"]}, {"d": ["4"]}]}]}, {"d": "4"}, True),
])
def test_attribute_scope(policy: dict[str, Any], values: dict[str, Any], expected: bool) -> None:
    assert on_attributes(policy, **values) is expected


@pytest.mark.parametrize(("policy", "body", "expected"), [
    ({"store": ["example"]}, {"store": "example"}, True),
    ({"order": {"kind": ["book"]}}, {"order": {"kind": "book"}}, True),
    ({"order": {"kind": ["book"]}}, {"order": {"kind": "pen"}}, False),
    ({"order.kind": ["book"]}, {"order": {"kind": "book"}}, True),  # a dotted key is the nested path
    ({"order": {"kind": ["book"]}}, {"order.kind": "book"}, True),
    ({"items": {"sku": ["a1"]}}, {"items": [{"sku": "b2"}, {"sku": "a1"}]}, True),  # arrays of objects
    ({"tags": ["x"]}, {"tags": ["y", "x"]}, True),
    ({"ok": [True]}, {"ok": True}, True),
    ({"ok": [True]}, {"ok": "true"}, False),
    ({"gone": [None]}, {"gone": None}, True),
    ({"gone": [{"exists": False}]}, {"other": 1}, True),
    ({"n": [{"numeric": [">", 10]}]}, {"n": 11}, True),
    ({"n": [{"numeric": [">", 10]}]}, {"n": "11"}, False),
    ({"store": ["example"]}, "not json", False),
    ({"store": ["example"]}, [1, 2], False),  # not an object
    ({"a": {"$or": [{"b": ["1"]}, {"c": ["2"]}]}}, {"a": {"c": "2"}}, True),
])
def test_body_scope(policy: dict[str, Any], body: Any, expected: bool) -> None:
    assert on_body(policy, body) is expected


@pytest.mark.parametrize(("policy", "message"), [
    ({"key": []}, "FilterPolicy: Empty arrays are not allowed"),
    ({"key_a": "value_one"}, 'FilterPolicy: "key_a" must be an object or an array'),
    ({"key": [["value"]]}, "FilterPolicy: Match value must be String, number, true, false, or null"),
    ({"key": [{"suffix": "value", "prefix": "value2"}]}, "FilterPolicy: Only one key allowed in match expression"),
    ({"key": [{"wrong-operator": True}]}, "FilterPolicy: Unrecognized match type wrong-operator"),
    ({"key": [{"suffix": 100}]}, "FilterPolicy: suffix match pattern must be a string"),
    ({"key": [{"suffix": None}]}, "FilterPolicy: suffix match pattern must be a string"),
    ({"key": [{"anything-but": {"exists": False}}]}, "FilterPolicy: Unsupported anything-but pattern: exists"),
    ({"key": [{"anything-but": {"wrong-operator": None}}]},
     "FilterPolicy: Unsupported anything-but pattern: wrong-operator"),
    ({"key": [{"anything-but": {"prefix": False}}]}, "FilterPolicy: prefix match pattern must be a string"),
    ({"key": [{"exists": "no"}]}, "FilterPolicy: exists match pattern must be either true or false."),
    ({"key": [{"exists": None}]}, "FilterPolicy: exists match pattern must be either true or false."),
    ({"key": [{"numeric": []}]}, "FilterPolicy: Invalid member in numeric match: ]"),
    ({"key": [{"numeric": [1, "<="]}]}, "FilterPolicy: Invalid member in numeric match: 1"),
    ({"key": [{"numeric": ["operator"]}]}, "FilterPolicy: Unrecognized numeric range operator: operator"),
    ({"key": [{"numeric": [">="]}]}, "FilterPolicy: Value of >= must be numeric"),
    ({"key": [{"numeric": [">", "20", "<", "30"]}]}, "FilterPolicy: Value of > must be numeric"),
    ({"key": [{"numeric": ["=", "000"]}]}, "FilterPolicy: Value of equals must be numeric"),
    ({"key": [{"numeric": [">", 20, 30]}]}, "FilterPolicy: Bad value in numeric range: 30"),
    ({"key": [{"numeric": [">", 20, "test"]}]}, "FilterPolicy: Bad numeric range operator: test"),
    ({"key": [{"numeric": [">=", 1, ">", 2]}]}, "FilterPolicy: Bad numeric range operator: >"),
    ({"key": [{"numeric": [">", 20, "<", "30"]}]}, "FilterPolicy: Value of < must be numeric"),
    ({"key": [{"numeric": [">", 20, "<="]}]}, "FilterPolicy: Value of <= must be numeric"),
    ({"key": [{"numeric": [">", 3, "<", 1]}]}, "FilterPolicy: Bottom must be less than top"),
    ({"key": [{"numeric": ["<", 100, ">", 10]}]}, "FilterPolicy: Too many elements in numeric expression"),
    ({"key": [{"numeric": [">", 20, "<", 30, "<", 50]}]}, "FilterPolicy: Too many terms in numeric range expression"),
    ({"key": [{"cidr": "bad-filter"}]}, "FilterPolicy: Malformed CIDR, one '/' required"),
    ({"key": [{"cidr": "10.0.0.0/x"}]}, "FilterPolicy: Malformed CIDR, mask bits must be an integer"),
    ({"key": [{"cidr": "xx.11.xx/24"}]}, "FilterPolicy: Nonstandard IP address: xx.11.xx"),
    ({"key": [{"cidr": ["bad-filter"]}]}, "FilterPolicy: prefix match pattern must be a string"),
    ({f"key{i}": ["v"] for i in range(6)}, "FilterPolicy: Filter policy can not have more than 5 keys"),
    ({"key": [f"value{i}" for i in range(151)]}, "FilterPolicy: Filter policy is too complex"),
    ({"key1": [f"v{i}" for i in range(100)], "key2": [f"v{i}" for i in range(51)]},
     "FilterPolicy: Filter policy is too complex"),
    ({"a": {"b": ["c"]}}, "Filter policy scope MessageAttributes does not support nested filter policy"),
])
def test_refusals(policy: Any, message: str) -> None:
    assert refused(policy) == message


def test_complexity_counts_depth_and_or() -> None:
    # AWS's recorded examples: 3 x 4 x 2 x 3 x 1 x 3 = 216 in the body scope
    nested = {"key_a": {"key_b": {"key_c": ["1", "2", "3", "4"]}}, "key_d": {"key_e": ["1", "2", "3"]},
              "key_f": ["1", "2", "3"]}
    assert refused(nested, BODY) == "FilterPolicy: Filter policy is too complex"
    # (4 x 6) + (4 x 4 x 4) + (4 x 4 x 4) = 152
    with_or = {"source": ["a", "b", "c", "d"],
               "$or": [{"metricName": ["1", "2", "3", "4", "5", "6"]},
                       {"metricType": ["1", "2", "3", "4"], "$or": [{"metricId": [1, 2, 3, 4]},
                                                                    {"spaceId": [1, 2, 3, 4]}]}]}
    assert refused(with_or) == "FilterPolicy: Filter policy is too complex"
    with_or["source"] = ["a", "b", "c"]  # (3 x 6) + (3 x 4 x 4) x 2 = 114
    compile_policy(json.dumps(with_or), ATTRIBUTES)


def test_policy_size_and_json() -> None:
    assert refused("{not json").startswith("FilterPolicy: failed to parse JSON.")
    assert refused("[1]") == "FilterPolicy: Filter policy must be a JSON object"
    assert refused(json.dumps({"k": ["x" * 300_000]})) == "FilterPolicy: Filter policy is too long"


TWENTY = {"kind": [f"kind{j}" for j in range(15)] + [{"prefix": "order-"}],
          "amount": [{"numeric": [">", 0, "<=", 1000]}], "region": [{"anything-but": ["eu-west-9"]}],
          "ip": [{"cidr": "10.0.0.0/8"}], "trace": [{"exists": True}]}


def test_twenty_conditions() -> None:
    """The benchmark's policy: 20 conditions over 5 keys (16 combinations, under AWS's 150)."""
    assert sum(len(v) for v in TWENTY.values()) == 20
    assert on_attributes(TWENTY, kind="order-7", amount=10, region="us-east-1", ip="10.1.2.3", trace="t")
    assert not on_attributes(TWENTY, kind="order-7", amount=10, region="eu-west-9", ip="10.1.2.3", trace="t")
