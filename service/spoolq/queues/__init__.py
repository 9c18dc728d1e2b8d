"""The store's queues as the doors see them.

* :mod:`~spoolq.queues.names`: how each door names its queues in the one store, and whose
  permissions apply to them
* :mod:`~spoolq.queues.queue_settings`: a queue's settings in the one JSON shape of the settings
  API, the CLI and the console
* :mod:`~spoolq.queues.job_ids`: Disque-shaped job ids, one-to-one with store message ids
* :mod:`~spoolq.queues.serving`: the store a server process serves, opened from its settings
"""
