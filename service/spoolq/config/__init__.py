"""What the config file declares, applied at start and on every reload, and its one check.

* :mod:`~spoolq.config.check`: one check of what a start or a reload would take in, shared by
  ``spoolq serve`` and ``spoolq check-config``
* :mod:`~spoolq.config.declared_queues`: the ``queues:`` section, made or brought to its settings
* :mod:`~spoolq.config.declared_topics`: the ``topics:`` section (SNS topics and subscriptions)
"""
