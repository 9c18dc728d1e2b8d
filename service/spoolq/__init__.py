"""spoolq: a durable message queue where every message is a file and every state change an atomic rename."""

__version__ = "0.2.0"
