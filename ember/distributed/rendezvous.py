"""``init_method`` rendezvous: ``rendezvous(url, rank, world_size)`` yields one
``(store, rank, world_size)`` for ``env://``, ``tcp://host:port`` and ``file:///path``;
more schemes plug in with ``register_rendezvous_handler``."""
from __future__ import annotations

import numbers
import os
from datetime import timedelta
from urllib.parse import urlparse, urlunparse

from ember.distributed.store import FileStore, PrefixStore, TCPStore

__all__ = ["register_rendezvous_handler", "rendezvous"]

_DEFAULT_PG_TIMEOUT = timedelta(minutes=30)
_rendezvous_handlers: dict = {}


def register_rendezvous_handler(scheme, handler):
    """Register ``handler(url, **kwargs)``, a generator of ``(store, rank, world_size)``."""
    if scheme in _rendezvous_handlers:
        raise RuntimeError(f"Rendezvous handler for {scheme}:// already registered")
    _rendezvous_handlers[scheme] = handler


def _query_to_dict(query: str) -> dict:
    return dict(pair.split("=", 1) for pair in query.split("&") if "=" in pair)


def rendezvous(url, rank=-1, world_size=-1, **kwargs):
    """The handler's generator for ``url``; ``rank``/``world_size`` other than -1 go into
    the url's query (it must not hold them already)."""
    if not isinstance(url, str):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    if not isinstance(rank, numbers.Integral):
        raise RuntimeError(f"`rank` must be an integer. {rank}")
    if not isinstance(world_size, numbers.Integral):
        raise RuntimeError(f"`world_size` must be an integer. {world_size}")
    result = urlparse(url)
    if rank != -1 or world_size != -1:
        query = _query_to_dict(result.query)
        assert "rank" not in query and "world_size" not in query, (
            f"The url: {url} has node-specific arguments(rank, world_size) already.")
        if rank != -1:
            query["rank"] = str(rank)
        if world_size != -1:
            query["world_size"] = str(world_size)
        url = urlunparse(result._replace(query="&".join(f"{k}={v}" for k, v in query.items())))
    if result.scheme not in _rendezvous_handlers:
        raise RuntimeError(f"No rendezvous handler for {result.scheme}://")
    return _rendezvous_handlers[result.scheme](url, **kwargs)


def _error(scheme, message):
    return ValueError(f"Error initializing torch.distributed using {scheme}:// rendezvous: "
                      f"{message}")


def _rank_and_size(scheme, query):
    if "rank" not in query:
        raise _error(scheme, "rank parameter missing")
    if "world_size" not in query:
        raise _error(scheme, "world size parameter missing")
    return int(query["rank"]), int(query["world_size"])


def _tcp_store(host, port, rank, world_size, timeout, query):
    use_libuv = query.get("use_libuv", "1") != "0"
    return TCPStore(host, port, world_size, rank == 0, timeout, multi_tenant=True,
                    use_libuv=use_libuv)


def _no_rerendezvous(scheme):
    raise RuntimeError(f"Unable to perform re-rendezvous using {scheme}:// method")


def _file_rendezvous_handler(url, **kwargs):
    result = urlparse(url)
    if not result.path:
        raise _error("file", "path missing")
    rank, world_size = _rank_and_size("file", _query_to_dict(result.query))
    yield FileStore(result.path, world_size), rank, world_size
    _no_rerendezvous("file")


def _tcp_rendezvous_handler(url, timeout=_DEFAULT_PG_TIMEOUT, **kwargs):
    result = urlparse(url)
    if not result.port:
        raise _error("tcp", "port number missing")
    query = _query_to_dict(result.query)
    rank, world_size = _rank_and_size("tcp", query)
    store = _tcp_store(result.hostname, result.port, rank, world_size, timeout, query)
    yield store, rank, world_size
    _no_rerendezvous("tcp")


def _env_rendezvous_handler(url, timeout=_DEFAULT_PG_TIMEOUT, **kwargs):
    """Rank and world size from the url's query, else RANK/WORLD_SIZE; the master from
    MASTER_ADDR/MASTER_PORT (rank 0 serves the TCPStore)."""
    query = _query_to_dict(urlparse(url).query)

    def env(name):
        value = os.environ.get(name)
        if value is None:
            raise _error("env", f"environment variable {name} expected, but not set")
        return value
    rank = int(query["rank"]) if "rank" in query else int(env("RANK"))
    world_size = int(query["world_size"]) if "world_size" in query else int(env("WORLD_SIZE"))
    host, port = env("MASTER_ADDR"), int(env("MASTER_PORT"))
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == str(True):
        # the launcher's agent serves the store: every worker is a client, and each
        # restart round works under its own prefix
        attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
        client = TCPStore(host, port, world_size, False, timeout, multi_tenant=True)
        yield PrefixStore(f"/worker/attempt_{attempt}", client), rank, world_size
        _no_rerendezvous("env")
    yield _tcp_store(host, port, rank, world_size, timeout, query), rank, world_size
    _no_rerendezvous("env")


register_rendezvous_handler("tcp", _tcp_rendezvous_handler)
register_rendezvous_handler("env", _env_rendezvous_handler)
register_rendezvous_handler("file", _file_rendezvous_handler)
