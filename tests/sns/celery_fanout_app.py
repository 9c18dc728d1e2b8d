"""A Celery app whose task is broadcast through kombu's SQS transport with SNS fan-out: each worker
consumes its own broadcast queue, which kombu subscribes (raw delivery) to the topic of the fanout
exchange ``broadcast_tasks``. Run by tests/sns/test_celery.py as the workers' app and the sender's.

SPOOLQ_PORT names the service, PREFIX the queue and topic names of one test, OUT the directory
where each worker writes the texts it ran the task with (one file per worker process)."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery
from kombu import Exchange
from kombu.common import Broadcast

BROADCAST = Exchange("broadcast_tasks", type="fanout")

app = Celery("fanout", broker=f"sqs://testing:testing@127.0.0.1:{os.environ['SPOOLQ_PORT']}")
app.conf.broker_transport_options = {"region": "us-east-1", "is_secure": False, "supports_fanout": True,
                                     "wait_time_seconds": 1, "polling_interval": 0.2,
                                     "queue_name_prefix": os.environ["PREFIX"]}
app.conf.task_queues = (Broadcast(BROADCAST.name),)
app.conf.task_routes = {"tests.sns.celery_fanout_app.announce": {"queue": BROADCAST.name,
                                                                  "exchange": BROADCAST.name}}
app.conf.worker_hijack_root_logger = False


@app.task
def announce(text: str) -> None:
    with open(Path(os.environ["OUT"]) / f"worker-{os.getpid()}", "a") as out:
        out.write(text + "\n")


def broadcast(text: str) -> None:
    """Send ``announce(text)`` to every worker. kombu's SQS transport knows an exchange's type only
    from a declaration in the sending process (a Broadcast queue is never declared by a sender),
    so the exchange is declared with the message; without it kombu drops the message."""
    announce.apply_async((text,), declare=[BROADCAST])
