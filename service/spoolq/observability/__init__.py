"""What the service tells its operators: metrics, message rates, and readiness.

* :mod:`~spoolq.observability.metrics`: the Prometheus metrics, per app, aggregated across processes
* :mod:`~spoolq.observability.counting`: which door a store event belongs to, and its counting
* :mod:`~spoolq.observability.rates`: each queue's message rates of the last hour
* :mod:`~spoolq.observability.readiness`: whether the store can take the largest message now
"""
