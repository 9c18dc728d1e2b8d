"""SNS topics, kept in the shared data root beside the store's queues.

* :mod:`~spoolq.topics.catalog`: topics and their subscriptions under ``<root>/topics/``
* :mod:`~spoolq.topics.fifo`: a FIFO topic's sequence numbers and deduplication window
* :mod:`~spoolq.topics.filter_policy`: subscription filter policies, checked as AWS checks them
"""
