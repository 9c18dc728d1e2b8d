"""What a server process is started with, on the base floor beside :mod:`spoolq.errors`.

* :mod:`~spoolq.settings.server`: the one frozen ``Settings`` from CLI flags and ``SPOOLQ_*``
  environment variables, checked at start
* :mod:`~spoolq.settings.config_file`: the YAML config file (``--config``) read in one place, and
  the config in force

Each section of the config file is parsed by the module that owns it (:mod:`spoolq.access.auth`,
:mod:`spoolq.config.declared_queues`, ...).
"""
