"""The flags of the service's limits that ``spoolq serve`` and ``spoolq check-config`` share: how
long a request's headers may take and how many connections a worker holds
(:mod:`spoolq.http.gunicorn.heads`), and when the data directory's headroom is low (:mod:`spoolq.observability.readiness`)."""

from __future__ import annotations

import argparse

#: the settings these flags set
LIMIT_SETTINGS = ("header_timeout", "max_connections", "low_space_percent", "low_inodes_percent")


def add_limit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--header-timeout", dest="header_timeout", type=float,
                   help="seconds a client has to send a request's headers (from its connection, or from the "
                        "first byte of its next request on a kept-alive one), and again for a body of declared "
                        "length, a second more per 16 KiB; later: 408 and closed (default 5)")
    p.add_argument("--max-connections", dest="max_connections", type=int,
                   help="open connections one worker holds at most, waiting long polls included; over it a "
                        "new connection closes the longest idle one, or gets 503 (default 10000, lowered to "
                        "what the open-file limit allows)")
    p.add_argument("--low-space-percent", dest="low_space_percent", type=float,
                   help="/readyz warns when the data directory's file system has less than this share free "
                        "(default 10); it answers 503 once a message of --max-body-bytes no longer fits")
    p.add_argument("--low-inodes-percent", dest="low_inodes_percent", type=float,
                   help="/readyz warns when fewer than this share of the file system's inodes are free, one "
                        "per message (default 5)")
