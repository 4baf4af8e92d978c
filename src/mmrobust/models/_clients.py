"""The HTTP clients of an API model: one per request in flight, each with one connection.

One shared ``httpx.Client`` whose pool holds ``concurrency`` connections cost about twice the
client CPU per request of a client per request at 64 requests in flight against a fast
server (``benchmarks/text_http.py``): every request scans the shared pool's connections under
one lock, polling each idle socket. And a pool keeping fewer connections alive than there are
requests in flight closes connections it has just handed to a waiting request
(encode/httpcore#1110): a request then hangs until its read timeout, or fails with a
retried ``Bad file descriptor``. A client per request in flight has a pool of one connection.

:class:`ClientPool` hands out idle clients last-returned first (its connection the likeliest
to be open) and makes a new one when none is idle, so it holds as many clients as requests
were ever in flight at once; they share one SSL context. Every client honours the model's
overall :class:`~mmrobust.models._deadline.Deadline`.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from mmrobust.models import _deadline

CLIENT_LIMITS = httpx.Limits(max_connections=1, max_keepalive_connections=1)
"""Each client carries one request at a time: one connection, kept alive for the next."""


def default_ssl_context() -> ssl.SSLContext | bool:
    """httpx's default SSL context (certifi, ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), made once
    for all of a pool's clients; ``True`` (each client makes its own) where httpx has no
    ``create_ssl_context``."""
    make = getattr(httpx, "create_ssl_context", None)
    return make() if make is not None else True


class ClientPool:
    """``httpx.Client`` objects made with ``client_args`` (``limits`` set to
    :data:`CLIENT_LIMITS`), one per request in flight. Thread-safe.

    Args:
        client_args: keyword arguments of ``httpx.Client`` (base URL, auth, headers, timeout,
            transport ...).
        deadline: the overall deadline every client's connections honour.
    """

    def __init__(self, client_args: dict[str, Any], deadline: _deadline.Deadline) -> None:
        self._args = {**client_args, "limits": CLIENT_LIMITS}
        self._deadline = deadline
        self._clients: list[httpx.Client] = []  # every client made (closed by close())
        self._idle: list[httpx.Client] = []  # not carrying a request (list ops are atomic)
        self._lock = threading.Lock()
        self._closed = False

    def __len__(self) -> int:
        """How many clients were made (and are not closed)."""
        return len(self._clients)

    @contextmanager
    def client(self) -> Iterator[httpx.Client]:
        """A client for one request, given back to the pool afterwards.

        Raises:
            RuntimeError: the pool is closed.
        """
        try:
            client = self._idle.pop()
        except IndexError:
            client = self._new()
        try:
            yield client
        finally:
            if not self._closed:
                self._idle.append(client)

    def _new(self) -> httpx.Client:
        with self._lock:
            if self._closed:  # as a closed httpx.Client says
                raise RuntimeError("Cannot send a request, as the model has been closed.")
            if "verify" not in self._args:  # one SSL context (loading CA files is slow)
                self._args["verify"] = default_ssl_context()
            client = httpx.Client(**self._args)
            _deadline.install(client, self._deadline)
            self._clients.append(client)
        return client

    def close(self) -> None:
        """Close every client, those carrying a request too (as closing one shared client
        did: their requests fail)."""
        with self._lock:
            self._closed = True
            clients, self._clients, self._idle = self._clients, [], []
        for client in clients:
            client.close()


__all__ = ["CLIENT_LIMITS", "ClientPool", "default_ssl_context"]
