"""A consumer process for the SIGTERM test: ``python consumer_proc.py URL KEY QUEUE LOG``.

The handler appends the message's payload to LOG (one line, flushed) and sleeps a little; on
exit the process prints its stats as JSON on stdout."""

from __future__ import annotations

import json
import sys
import time

from spoolq_client import Consumer, Message, SpoolqClient


def main() -> int:
    url, key, queue, log_path = sys.argv[1:5]
    with open(log_path, "a", encoding="utf-8") as log, SpoolqClient(url, key) as client:
        def handle(message: Message) -> None:
            log.write(json.dumps({"id": message.id, "payload": message.payload}) + "\n")
            log.flush()
            time.sleep(0.05)

        consumer = Consumer(client, queue, handle, concurrency=4, batch_size=10, claim_ttl=120, wait=2)
        print("ready", flush=True)
        stats = consumer.run()
    print(json.dumps(stats.as_dict()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
