"""The connections of one probe run: one transport, one pool per server, one SSL context.

httpcore's connection pool scans every connection it holds whenever a request comes or
goes (and counts them again for each idle one), so one pool for a whole fleet costs time
quadratic in the connections open: 100 servers at 64 at a time took 24 s, nearly all of
it in that scan.  :class:`PerServerTransport` keeps one small pool per server (scheme,
host, port) behind one transport, all with the same :class:`ssl.SSLContext`, built once
by the caller; a server's pool is closed when the last probe using it ends.
"""

from __future__ import annotations

import ssl

import httpx

__all__ = ["PerServerTransport"]

_Key = tuple[bytes, bytes, int | None]


def _key(url: httpx.URL) -> _Key:
    return (url.raw_scheme, url.raw_host, url.port)


class PerServerTransport(httpx.AsyncBaseTransport):
    """One connection pool per server, created on its first request."""

    def __init__(self, ssl_context: ssl.SSLContext, connections_per_server: int) -> None:
        self._ssl_context = ssl_context
        self._limits = httpx.Limits(
            max_connections=None, max_keepalive_connections=connections_per_server
        )
        self._pools: dict[_Key, httpx.AsyncHTTPTransport] = {}
        self._users: dict[_Key, int] = {}

    def _pool(self, key: _Key) -> httpx.AsyncHTTPTransport:
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = httpx.AsyncHTTPTransport(
                verify=self._ssl_context, limits=self._limits, trust_env=False
            )
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through its server's own pool."""
        return await self._pool(_key(request.url)).handle_async_request(request)

    def acquire(self, url: str) -> None:
        """A probe of the server at ``url`` begins."""
        key = _key(httpx.URL(url))
        self._users[key] = self._users.get(key, 0) + 1

    async def release(self, url: str) -> None:
        """A probe of the server at ``url`` ended: close its pool if no other uses it."""
        key = _key(httpx.URL(url))
        left = self._users.get(key, 1) - 1
        if left > 0:
            self._users[key] = left
            return
        self._users.pop(key, None)
        pool = self._pools.pop(key, None)
        if pool is not None:
            await pool.aclose()

    @property
    def open_pools(self) -> int:
        """How many servers have a pool now."""
        return len(self._pools)

    async def aclose(self) -> None:
        """Close every pool."""
        pools, self._pools = list(self._pools.values()), {}
        self._users.clear()
        for pool in pools:
            await pool.aclose()
