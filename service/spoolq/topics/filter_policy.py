"""SNS subscription filter policies: checked as AWS checks them, compiled once, matched per publish.

A policy is a JSON object. In the ``MessageAttributes`` scope (the default) its keys are message
attribute names; in the ``MessageBody`` scope they are keys of the message body (a JSON object),
nested as the body nests them (``{"order": {"kind": ["book"]}}``; a key with dots, ``"order.kind"``,
means the same path). Each key's value is a list of conditions, any of which may match; every key
must match; ``"$or": [policy, policy, ...]`` at any level matches when one of its policies does.

Conditions (what AWS's message filtering documents):

===================================  =================================================================
``"text"``, ``12.5``, ``true``,       exact: a string, a number (compared as numbers), a boolean or
``null``                              null (the last two only in the body)
``{"prefix": "ord-"}``                a string that starts with it (``suffix``: ends with it)
``{"equals-ignore-case": "Red"}``     the same string in any case
``{"anything-but": ...}``             present, and not: one value or a list of values, or
                                      ``{"prefix": ...}``, ``{"suffix": ...}``, ``{"equals-ignore-case": ...}``
``{"numeric": [">", 0, "<=", 5]}``    a number in the range (``=``, ``<``, ``<=``, ``>``, ``>=``)
``{"exists": true}``                  the key is present (``false``: absent)
``{"cidr": "10.0.0.0/24"}``           an IPv4 or IPv6 address in the network
===================================  =================================================================

What a value is: an attribute of type ``String`` is its string, ``Number`` its number,
``String.Array`` each element of its JSON array, ``Binary`` nothing to compare (it exists).
In the body, an array gives each of its elements (objects in it are walked further). A key
matches when one of its values matches one of its conditions.

Limits, each refused with AWS's wording (:class:`PolicyError`): at most 5 keys at the top level;
at most 150 combinations (the product over the keys of each key's number of values, times each
key's depth in the body, added up over the alternatives of every ``$or``); at most 256 KiB of
policy; no nesting in the ``MessageAttributes`` scope. The wording is AWS's without the position
that AWS's JSON parser appends (``at [Source: ...; line: 1, column: N]``).

Pure: no I/O, no Flask; :func:`compile_policy` is cached by (policy, scope).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

MAX_KEYS = 5
MAX_COMBINATIONS = 150
MAX_POLICY_BYTES = 256 * 1024
ATTRIBUTES = "MessageAttributes"
BODY = "MessageBody"
_LOWER = {">": True, ">=": True}
_UPPER = {"<": True, "<=": True}
Values = list[Any]
Condition = Callable[[Values | None], bool]


class PolicyError(Exception):
    """A policy AWS would refuse; ``message`` is what follows ``Invalid parameter: `` (and, for a
    policy given in Subscribe's attributes, ``Attributes Reason: ``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _refuse(reason: str) -> PolicyError:
    return PolicyError(f"FilterPolicy: {reason}")


class Policy:
    """A checked policy: :meth:`matches` a message. ``branches``: its alternatives (``$or``
    expanded), each a list of (dotted key, the test of that key's conditions)."""

    def __init__(self, scope: str, branches: list[list[tuple[str, Condition]]]) -> None:
        self.scope = scope
        self.branches = branches

    def matches(self, attributes: Mapping[str, tuple[str, str]], body: str | None) -> bool:
        """Whether a message matches: ``attributes`` name -> (DataType, value as sent), ``body`` the
        message the subscription would get (parsed only in the body scope)."""
        return self.matches_fields(attribute_fields(attributes) if self.scope == ATTRIBUTES else body_fields(body))

    def matches_fields(self, fields: Mapping[str, Values] | None) -> bool:
        """:meth:`matches` on the message's values already taken apart (:func:`attribute_fields` or
        :func:`body_fields`, made once for every subscription of a message)."""
        if fields is None:
            return False
        for branch in self.branches:
            for key, test in branch:
                if not test(fields.get(key)):
                    break
            else:
                return True
        return False


#: a policy that matches no message (no alternative to match)
NOTHING = Policy(ATTRIBUTES, [])


@functools.lru_cache(maxsize=1024)
def compile_policy(text: str, scope: str = ATTRIBUTES) -> Policy:
    """The policy ``text`` checked for ``scope``; :class:`PolicyError` as AWS words its refusal."""
    if len(text.encode("utf-8")) > MAX_POLICY_BYTES:
        raise _refuse("Filter policy is too long")
    try:
        policy = json.loads(text)
    except ValueError as e:
        raise _refuse(f"failed to parse JSON. {e}") from None
    if not isinstance(policy, dict):
        raise _refuse("Filter policy must be a JSON object")
    if len(policy) > MAX_KEYS:
        raise _refuse(f"Filter policy can not have more than {MAX_KEYS} keys")
    combinations = _combinations(policy, 1, 1, scope)
    if combinations > MAX_COMBINATIONS:
        raise _refuse("Filter policy is too complex")
    return Policy(scope, [[(key, _key_test(rules)) for key, rules in branch.items()]
                          for branch in _branches(policy, "")])


def _combinations(node: Mapping[str, Any], depth: int, product: int, scope: str) -> int:
    """AWS's count of a policy's combinations (see the module docstring), checking its shape."""
    for key, value in node.items():
        if isinstance(value, dict):
            product = _combinations(value, depth + 1, product, scope)
        elif isinstance(value, list):
            if not value:
                raise _refuse("Empty arrays are not allowed")
            if key == "$or":
                total = 0
                for alternative in value:
                    if not isinstance(alternative, dict):
                        raise _refuse('"$or" must be an array of objects')
                    total += _combinations(alternative, depth, product, scope)
                product = total
            else:
                product *= len(value) * depth
        else:
            raise _refuse(f'"{key}" must be an object or an array')
    if scope == ATTRIBUTES and depth > 1:
        raise PolicyError("Filter policy scope MessageAttributes does not support nested filter policy")
    return product


def _branches(node: Mapping[str, Any], prefix: str) -> list[dict[str, list[Any]]]:
    """The policy as alternatives (``$or`` expanded), each a map of dotted key -> rules."""
    branches: list[dict[str, list[Any]]] = [{}]
    for key, value in node.items():
        if key == "$or" and isinstance(value, list):
            options = [b for alternative in value for b in _branches(alternative, prefix)]
        elif isinstance(value, dict):
            options = _branches(value, f"{prefix}{key}.")
        else:
            options = [{f"{prefix}{key}": value}]
        branches = [_merged(b, option) for b in branches for option in options]
    return branches


def _merged(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> dict[str, list[Any]]:
    out = dict(a)
    for key, rules in b.items():
        out[key] = out[key] + rules if key in out else rules  # the same key twice: both must hold
    return out


# ------------------------------------------------------------ conditions


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _key_test(rules: list[Any]) -> Condition:
    """One test for a key's conditions (any may match): its exact strings and numbers are looked
    up in a set at once, the other conditions tried one by one."""
    strings: set[str] = set()
    numbers: set[float] = set()
    others: list[Condition] = []
    for rule in rules:
        if isinstance(rule, str):
            strings.add(rule)
        elif _is_number(rule):
            numbers.add(float(rule))
        else:
            others.append(_condition(rule))

    def test(values: Values | None) -> bool:
        if values is not None and (strings or numbers):
            for v in values:
                if type(v) is str:
                    if v in strings:
                        return True
                elif _is_number(v) and float(v) in numbers:
                    return True
        return any(other(values) for other in others)

    return test


def _exact(expected: Any) -> Condition:
    if isinstance(expected, str):
        return lambda values: any(isinstance(v, str) and v == expected for v in values or ())
    if _is_number(expected):
        number = float(expected)
        return lambda values: any(_is_number(v) and float(v) == number for v in values or ())
    if isinstance(expected, bool):
        return lambda values: any(v is expected for v in values or ())
    if expected is None:
        return lambda values: values is not None and any(v is None for v in values)
    raise _refuse("Match value must be String, number, true, false, or null")


def _text_rule(kind: str, value: Any, inside: str = "") -> Callable[[str], bool]:
    if kind == "prefix":
        if not isinstance(value, str):
            raise _refuse("prefix match pattern must be a string")
        return lambda s: s.startswith(value)
    if kind == "suffix":
        if not isinstance(value, str):
            raise _refuse("suffix match pattern must be a string")
        return lambda s: s.endswith(value)
    if kind == "equals-ignore-case":
        if not isinstance(value, str):
            raise _refuse("equals-ignore-case match pattern must be a string")
        folded = value.casefold()
        return lambda s: s.casefold() == folded
    raise _refuse(f"Unsupported anything-but pattern: {kind}" if inside else f"Unrecognized match type {kind}")


def _strings_test(test: Callable[[str], bool]) -> Condition:
    """A condition on a key's string values (loops, not generators: this runs for every
    subscription of every publish)."""
    def match(values: Values | None) -> bool:
        if values:
            for v in values:
                if type(v) is str and test(v):
                    return True
        return False

    return match


def _condition(rule: Any) -> Condition:
    if not isinstance(rule, dict):
        if isinstance(rule, list):
            raise _refuse("Match value must be String, number, true, false, or null")
        return _exact(rule)
    if len(rule) != 1:
        raise _refuse("Only one key allowed in match expression")
    ((kind, value),) = rule.items()
    if kind in ("prefix", "suffix", "equals-ignore-case"):
        return _strings_test(_text_rule(kind, value))
    if kind == "anything-but":
        return _anything_but(value)
    if kind == "numeric":
        within = _numeric(value)

        def numeric(values: Values | None) -> bool:
            if values:
                for v in values:
                    if (type(v) is float or type(v) is int) and within(v):
                        return True
            return False

        return numeric
    if kind == "exists":
        if not isinstance(value, bool):
            raise _refuse("exists match pattern must be either true or false.")
        return (lambda values: values is not None) if value else (lambda values: values is None)
    if kind == "cidr":
        network = _network(value)
        bits, net, mask = network.version, int(network.network_address), int(network.netmask)

        def in_network(text: str) -> bool:
            address = _address(text)
            return address is not None and address[0] == bits and address[1] & mask == net

        return _strings_test(in_network)
    raise _refuse(f"Unrecognized match type {kind}")


def _anything_but(value: Any) -> Condition:
    if isinstance(value, dict):
        if len(value) != 1:
            raise _refuse("Only one key allowed in match expression")
        ((kind, inner),) = value.items()
        test = _text_rule(kind, inner, inside="anything-but")

        def not_like(values: Values | None) -> bool:
            if values:
                for v in values:
                    if type(v) is str and not test(v):
                        return True
            return False

        return not_like
    excluded = value if isinstance(value, list) else [value]
    for item in excluded:
        if not (isinstance(item, str) or _is_number(item)):
            raise _refuse("Inside anything but list, start|null|boolean is not supported.")
    strings = {v for v in excluded if isinstance(v, str)}
    numbers = {float(v) for v in excluded if _is_number(v)}

    def outside(values: Values | None) -> bool:  # loops, not generators: this runs on every publish
        if values is None:
            return False
        for v in values:
            if type(v) is str:
                if v not in strings:
                    return True
            elif not _is_number(v) or float(v) not in numbers:
                return True
        return False

    return outside


def _numeric(terms: Any) -> Callable[[float], bool]:
    """A numeric range (``["=", 5]``, ``[">", 0, "<=", 5]``), checked with AWS's wording."""
    if not isinstance(terms, list) or not terms or not isinstance(terms[0], str):
        shown = "]" if isinstance(terms, list) and not terms else json.dumps(terms[0] if isinstance(terms, list)
                                                                             else terms)
        raise _refuse(f"Invalid member in numeric match: {shown}")
    first = terms[0]
    if first not in ("=", "<", "<=", ">", ">="):
        raise _refuse(f"Unrecognized numeric range operator: {first}")
    low = _bound(first, terms[1:2])
    if first == "=":
        if len(terms) > 2:
            raise _refuse("Too many elements in numeric expression")
        return lambda x: x == low
    if first in _UPPER:
        if len(terms) > 2:
            raise _refuse("Too many elements in numeric expression")
        return (lambda x: x < low) if first == "<" else (lambda x: x <= low)
    if len(terms) == 2:
        return (lambda x: x > low) if first == ">" else (lambda x: x >= low)
    second = terms[2]
    if not isinstance(second, str):
        raise _refuse(f"Bad value in numeric range: {json.dumps(second)}")
    if second not in _UPPER:
        raise _refuse(f"Bad numeric range operator: {second}")
    high = _bound(second, terms[3:4])
    if len(terms) > 4:
        raise _refuse("Too many terms in numeric range expression")
    if low >= high:
        raise _refuse("Bottom must be less than top")
    if first == ">":
        return (lambda x: low < x < high) if second == "<" else (lambda x: low < x <= high)
    return (lambda x: low <= x < high) if second == "<" else (lambda x: low <= x <= high)


def _bound(operator: str, value: list[Any]) -> float:
    if not value or not _is_number(value[0]) or not math.isfinite(float(value[0])):
        raise _refuse(f"Value of {'equals' if operator == '=' else operator} must be numeric")
    return float(value[0])


def _network(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if not isinstance(value, str):
        raise _refuse("prefix match pattern must be a string")
    if value.count("/") != 1:
        raise _refuse("Malformed CIDR, one '/' required")
    address, bits = value.split("/")
    if not bits.isdigit():
        raise _refuse("Malformed CIDR, mask bits must be an integer")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise _refuse(f"Nonstandard IP address: {address}") from None
    if int(bits) > ip.max_prefixlen:
        raise _refuse("Malformed CIDR, mask bits must be an integer")
    return ipaddress.ip_network(f"{address}/{bits}", strict=False)


@functools.lru_cache(maxsize=4096)
def _address(text: str) -> tuple[int, int] | None:
    """An address's IP version and value, or ``None`` for text that is no address."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    return address.version, int(address)


# ------------------------------------------------------------ a message's values


def attribute_fields(attributes: Mapping[str, tuple[str, str]]) -> dict[str, Values]:
    """Each message attribute's values for matching (see the module docstring)."""
    fields: dict[str, Values] = {}
    for name, (data_type, value) in attributes.items():
        base = data_type.split(".", 1)[0]
        if data_type.startswith("String.Array"):
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = value
            fields[name] = parsed if isinstance(parsed, list) else [value]
        elif base == "Number":
            try:
                fields[name] = [float(value)]
            except ValueError:
                fields[name] = []
        elif base == "String":
            fields[name] = [value]
        else:  # Binary: present, nothing to compare
            fields[name] = []
    return fields


def body_fields(body: str | None) -> dict[str, Values] | None:
    """The body's values by dotted path; ``None`` when the body is no JSON object (it matches no policy)."""
    if body is None:
        return None
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    fields: dict[str, Values] = {}
    _walk(payload, "", fields)
    return fields


def _walk(node: Any, path: str, fields: dict[str, Values]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _walk(value, f"{path}.{key}" if path else str(key), fields)
    elif isinstance(node, list):
        fields.setdefault(path, [])
        for item in node:
            if isinstance(item, (dict, list)):
                _walk(item, path, fields)
            else:
                fields[path].append(item)
    else:
        fields.setdefault(path, []).append(node)
