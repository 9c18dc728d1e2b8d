"""The Disque front door: Disque's job commands over RESP2 (the Redis protocol) on the same store.

* :mod:`~spoolq.disque.server`: the asyncio listener process, connections, AUTH, the command table
* :mod:`~spoolq.disque.supervisor`: the listener as a child of ``spoolq serve``: started, watched, stopped
* :mod:`~spoolq.disque.protocol`: RESP parsing (hiredis) and reply encoding
* :mod:`~spoolq.disque.args`: argument parsing and Disque's error words
* :mod:`~spoolq.disque.jobs`: ADDJOB, GETJOB's fetch, ACKJOB, NACK, ENQUEUE, DEQUEUE, WORKING
* :mod:`~spoolq.disque.queues`: QLEN, QPEEK, QSTAT, QSCAN, JSCAN, SHOW, PAUSE
* :mod:`~spoolq.disque.blocking`: blocked GETJOBs without a thread each
* :mod:`spoolq.queues.job_ids` (shared with the console): Disque-shaped job ids, one-to-one with store ids
* :mod:`~spoolq.disque.info`: HELLO, INFO, PING, CONFIG GET, COMMAND

Disque queue ``q`` is store queue ``disque:q``. See ``docs/disque.md``.
"""
