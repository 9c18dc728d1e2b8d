"""Who may do what, and over which connections: one model for every door.

* :mod:`~spoolq.access.auth`: identities (EmoDB API keys, SigV4 credentials) and per-queue
  permissions, loaded once from the config file
* :mod:`~spoolq.access.tls`: the server's certificate and key, and the clients' CA for mutual TLS
* :mod:`~spoolq.access.listener_gate`: at a final stop a listening socket first drops new connection
  attempts, so closing its last copy resets no connection (HTTP and Disque)
"""
