"""Who may do what, and over which connections: one model for every door.

* :mod:`~spoolq.access.auth`: identities (EmoDB API keys, SigV4 credentials) and per-queue
  permissions, loaded once from the config file
* :mod:`~spoolq.access.tls`: the server's certificate and key, and the clients' CA for mutual TLS
"""
