from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleCan")



@_attrs_define
class ConsoleCan:
    """ 
        Attributes:
            get_status (bool):
            post (bool):
            poll (bool):
            manage (bool): purge, unclaim all, move, redrive, cancel: `poll` on most queues, `admin` on SQS queues
     """

    get_status: bool
    post: bool
    poll: bool
    manage: bool





    def to_dict(self) -> dict[str, Any]:
        get_status = self.get_status

        post = self.post

        poll = self.poll

        manage = self.manage


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "get_status": get_status,
            "post": post,
            "poll": poll,
            "manage": manage,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        get_status = d.pop("get_status")

        post = d.pop("post")

        poll = d.pop("poll")

        manage = d.pop("manage")

        console_can = cls(
            get_status=get_status,
            post=post,
            poll=poll,
            manage=manage,
        )

        return console_can

