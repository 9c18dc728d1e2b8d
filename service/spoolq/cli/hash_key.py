"""``spoolq hash-key``: the SHA-256 digest of an API key, as the ``sha256`` of an ``api_keys`` entry in
the config file holds it (:func:`spoolq.access.auth.hash_key`)."""

from __future__ import annotations

import argparse
import getpass
import sys

from spoolq.cli.command import Command


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stdin", action="store_true", help="read the key from standard input instead of a prompt")


def run_hash_key(args: argparse.Namespace) -> int:
    from spoolq.access.auth import hash_key

    if not args.stdin and not sys.stdin.isatty():  # piped: a prompt would warn that it echoes
        print("spoolq: hash-key reads a piped key with --stdin (`echo -n KEY | spoolq hash-key --stdin`); "
              "without it, it asks on a terminal", file=sys.stderr)
        return 2
    key = sys.stdin.readline().rstrip("\n") if args.stdin else getpass.getpass("API key: ")
    if not key:
        print("spoolq: empty key", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


HASH_KEY = Command("hash-key", "print the sha256 of an API key for the config file", _arguments, run_hash_key,
                   examples="echo -n 'my-key' | spoolq hash-key --stdin")
