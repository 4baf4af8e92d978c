"""An overall deadline for one HTTP attempt (httpx's timeouts are per socket operation).

httpx's ``timeout`` bounds each connect, read and write; a server that sends
one byte a second never trips a 3 s read timeout, and a request could run for
ever. :class:`Deadline` is a per-thread clock: :meth:`Deadline.start` before
the attempt, and every socket operation of the client then waits at most the
time left, raising httpcore's ``ReadTimeout`` / ``WriteTimeout`` /
``ConnectTimeout`` (which httpx turns into ``httpx.TimeoutException``) once it
has passed. :func:`install` wraps the network backend of every connection pool
of an ``httpx.Client`` (its default transport and any proxy mounts), so
headers and body are both covered, on new and on reused connections.

The hook reaches one level under httpx's public API (``transport._pool`` and
the pool's network backend); :func:`install` returns how many pools it
wrapped, and the caller keeps a public-API check on the body (a streamed read
that stops at the deadline) for the case it wrapped none.
"""

from __future__ import annotations

import threading
import time
import typing
from typing import Any

import httpcore
import httpx

_Opt = Any  # httpcore's SOCKET_OPTION


class Deadline(threading.local):
    """The end time of the attempt running in this thread (``None``: no deadline)."""

    at: float | None = None

    def start(self, seconds: float) -> None:
        """Set the deadline ``seconds`` from now (monotonic clock)."""
        self.at = time.monotonic() + seconds

    def clear(self) -> None:
        """No deadline."""
        self.at = None

    def passed(self) -> bool:
        """True once the deadline is set and reached."""
        return self.at is not None and time.monotonic() >= self.at

    def clamp(self, timeout: float | None, error: type[Exception]) -> float | None:
        """``timeout`` cut to the time left; raises ``error`` when none is left."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise error("overall request deadline passed")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        )
        return _Stream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend, deadline: Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[_Opt] | None = None,
    ) -> httpcore.NetworkStream:
        t = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        return _Stream(
            self._inner.connect_tcp(host, port, t, local_address, socket_options), self._deadline
        )

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[_Opt] | None = None,
    ) -> httpcore.NetworkStream:
        t = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, t, socket_options), self._deadline)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def install(client: httpx.Client, deadline: Deadline) -> int:
    """Make every connection pool of ``client`` honour ``deadline``; return how many it wrapped."""
    transports: list[Any] = [getattr(client, "_transport", None)]
    transports += list(getattr(client, "_mounts", {}).values())
    wrapped = 0
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore.NetworkBackend) and not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend, deadline)  # type: ignore[union-attr]
            wrapped += 1
    return wrapped


__all__ = ["Deadline", "install"]
