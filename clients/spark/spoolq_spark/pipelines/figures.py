"""The figures of the ``audit`` pipeline, per queue and UTC hour, in the order they are shown.

:mod:`~spoolq_spark.pipelines.audit` computes them and :mod:`~spoolq_spark.pipelines.report`
renders them; both import this module and neither imports the other's names back.

* ``acked``: archived (acknowledged) records;
* ``receive_p50/p95/p99``: seconds from send to first receive;
* ``ack_p50/p95/p99``: seconds from send to acknowledgement;
* ``redelivered``: records received more than once; ``redeliveries``: the extra receives;
* ``dead_lettered``: records acknowledged on a dead-letter queue of this queue.
"""

FIGURES = ("acked", "receive_p50", "receive_p95", "receive_p99", "ack_p50", "ack_p95", "ack_p99",
           "redelivered", "redeliveries", "dead_lettered")

#: the figures that are counts (integers; the others are seconds)
COUNTS = ("acked", "redelivered", "redeliveries", "dead_lettered")
