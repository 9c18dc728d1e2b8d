"""gunicorn's side of the HTTP doors: the master, the worker, and how a request reaches the app.

Everything here is tied to gunicorn's own classes (the gthread worker and the arbiter of 27.x) and
nothing of it knows Flask or a door: ``spoolq serve`` hands :func:`~spoolq.http.gunicorn.server.serve`
the app factory (:func:`spoolq.http.app.create_app`), which each worker calls after the fork.

* :mod:`~spoolq.http.gunicorn.server`: gunicorn started programmatically, its options (the same
  ones ``deploy/gunicorn.conf.py`` gives plain gunicorn) and hooks, the metrics directory
* :mod:`~spoolq.http.gunicorn.arbiter`: the master, with a reload that is checked first and hands
  over to new workers only once they serve
* :mod:`~spoolq.http.gunicorn.reload_state`: the outcome of the start and of the last reload, shown
  by every worker (``/readyz``, ``/metrics``)
* :mod:`~spoolq.http.gunicorn.worker`: ``SpoolqThreadWorker``, the gthread worker with parked long
  polls; the class ``worker_class`` names
* :mod:`~spoolq.http.gunicorn.heads`: request heads (and bodies of declared length) read by the
  worker's loop, before a thread is taken
* :mod:`~spoolq.http.gunicorn.request_line`: request lines as long as SQS's query protocol by GET
  needs, refused in the door's format
* :mod:`~spoolq.http.gunicorn.parking`: the contract between a door's poll and the worker (the
  doors import it; it imports nothing of gunicorn)
"""
