from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleSubscription")



@_attrs_define
class ConsoleSubscription:
    """ 
        Attributes:
            arn (str):
            protocol (str): sqs, http, https, email, email-json or sms
            endpoint (str): the queue's ARN, the URL, the email address or the phone number
            queue (None | str): the store name of the queue it delivers to (sqs subscriptions)
            raw (bool): raw message delivery (no envelope)
            pending (bool): not confirmed by its endpoint yet
            filter_policy (None | str):
            filter_policy_scope (None | str):
            dead_letter (None | str): the dead-letter queue's ARN (RedrivePolicy)
     """

    arn: str
    protocol: str
    endpoint: str
    queue: None | str
    raw: bool
    pending: bool
    filter_policy: None | str
    filter_policy_scope: None | str
    dead_letter: None | str





    def to_dict(self) -> dict[str, Any]:
        arn = self.arn

        protocol = self.protocol

        endpoint = self.endpoint

        queue: None | str
        queue = self.queue

        raw = self.raw

        pending = self.pending

        filter_policy: None | str
        filter_policy = self.filter_policy

        filter_policy_scope: None | str
        filter_policy_scope = self.filter_policy_scope

        dead_letter: None | str
        dead_letter = self.dead_letter


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "arn": arn,
            "protocol": protocol,
            "endpoint": endpoint,
            "queue": queue,
            "raw": raw,
            "pending": pending,
            "filter_policy": filter_policy,
            "filter_policy_scope": filter_policy_scope,
            "dead_letter": dead_letter,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        arn = d.pop("arn")

        protocol = d.pop("protocol")

        endpoint = d.pop("endpoint")

        def _parse_queue(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        queue = _parse_queue(d.pop("queue"))


        raw = d.pop("raw")

        pending = d.pop("pending")

        def _parse_filter_policy(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        filter_policy = _parse_filter_policy(d.pop("filter_policy"))


        def _parse_filter_policy_scope(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        filter_policy_scope = _parse_filter_policy_scope(d.pop("filter_policy_scope"))


        def _parse_dead_letter(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        dead_letter = _parse_dead_letter(d.pop("dead_letter"))


        console_subscription = cls(
            arn=arn,
            protocol=protocol,
            endpoint=endpoint,
            queue=queue,
            raw=raw,
            pending=pending,
            filter_policy=filter_policy,
            filter_policy_scope=filter_policy_scope,
            dead_letter=dead_letter,
        )

        return console_subscription

