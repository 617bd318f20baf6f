"""Rendezvous API: how agents agree on a group (rank, world size) per round."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = [
    # one round's outcome and the backend interface
    "RendezvousStoreInfo", "RendezvousInfo", "RendezvousHandler",
    # errors
    "RendezvousError", "RendezvousTimeoutError", "RendezvousClosedError",
    "RendezvousGracefulExitError", "RendezvousConnectionError", "RendezvousStateError",
    # configuration and backends
    "RendezvousParameters", "RendezvousHandlerRegistry", "rendezvous_handler_registry",
]


@dataclass
class RendezvousStoreInfo:
    """Where the workers' store (``MASTER_ADDR:MASTER_PORT``) lives this round."""
    master_addr: str
    master_port: int


class RendezvousInfo:
    """Result of one round: the agents' ``store``, this node's ``rank`` among
    ``world_size`` nodes, and the workers' bootstrap store."""

    def __init__(self, store, rank: int, world_size: int,
                 bootstrap_store_info: RendezvousStoreInfo):
        self._store = store
        self._rank = rank
        self._world_size = world_size
        self._bootstrap_store_info = bootstrap_store_info

    store = property(lambda self: self._store)
    rank = property(lambda self: self._rank)
    world_size = property(lambda self: self._world_size)
    bootstrap_store_info = property(lambda self: self._bootstrap_store_info)


class RendezvousHandler:
    """Interface of a rendezvous backend (see ``StoreRendezvousHandler``)."""

    def get_backend(self) -> str:
        raise NotImplementedError

    @property
    def use_agent_store(self) -> bool:
        return False

    def next_rendezvous(self) -> RendezvousInfo:
        raise NotImplementedError

    def is_closed(self) -> bool:
        raise NotImplementedError

    def set_closed(self) -> None:
        raise NotImplementedError

    def num_nodes_waiting(self) -> int:
        raise NotImplementedError

    def get_run_id(self) -> str:
        raise NotImplementedError

    def shutdown(self) -> bool:
        raise NotImplementedError


class RendezvousError(Exception):
    """Base of the rendezvous errors."""


# What can go wrong in a round, most common first.
class RendezvousTimeoutError(RendezvousError):
    """A rendezvous did not complete in time."""


class RendezvousClosedError(RendezvousError):
    """The rendezvous is closed (the job ended or a node gave up)."""


class RendezvousGracefulExitError(RendezvousError):
    """The node is not part of the rendezvous and exits gracefully."""


class RendezvousConnectionError(RendezvousError):
    """The rendezvous backend could not be reached."""


class RendezvousStateError(RendezvousError):
    """The rendezvous state is corrupt."""


# Spellings ``--rdzv-conf key=value`` may use for a flag.
_FLAG_WORDS = {**dict.fromkeys(("1", "true", "t", "yes", "y"), True),
               **dict.fromkeys(("0", "false", "f", "no", "n"), False)}


def _check(ok: bool, message: str):
    if not ok:
        raise ValueError(message)


def _bad_option(key: str, kind: str) -> str:
    return (f"The rendezvous configuration option '{key}' does not represent a valid "
            f"{kind} value.")


def _check_backend_name(backend):
    _check(bool(backend), "The rendezvous backend name must be a non-empty string.")


class RendezvousParameters:
    """Configuration of a rendezvous handler: ``min_nodes..max_nodes`` agents meet at
    ``endpoint`` under ``run_id``; ``**config`` is the backend's ``config`` (from
    ``--rdzv-conf k=v,...``)."""

    def __init__(self, backend, endpoint, run_id, min_nodes: int, max_nodes: int,
                 local_addr=None, **config):
        _check_backend_name(backend)
        _check(min_nodes >= 1, f"The minimum number of rendezvous nodes ({min_nodes}) must "
                               "be greater than zero.")
        _check(min_nodes <= max_nodes,
               f"The maximum number of rendezvous nodes ({max_nodes}) must be greater than or "
               f"equal to the minimum number of rendezvous nodes ({min_nodes}).")
        self.backend, self.endpoint, self.run_id = backend, endpoint, run_id
        self.min_nodes, self.max_nodes, self.local_addr = min_nodes, max_nodes, local_addr
        self.config = config

    def get(self, key: str, default: Any = None) -> Any:
        """``config[key]``, or ``default`` when it was not given."""
        return self.config.get(key, default)

    def get_as_bool(self, key: str, default: bool | None = None) -> bool | None:
        """``config[key]`` read as a flag: a bool, 0/1, or a word from ``_FLAG_WORDS``."""
        raw = self.get(key, default)
        if raw is None or isinstance(raw, bool):
            return raw
        flag = _FLAG_WORDS.get(str(raw).lower()) if isinstance(raw, (int, str)) else None
        _check(flag is not None, _bad_option(key, "boolean"))
        return flag

    def get_as_int(self, key: str, default: int | None = None) -> int | None:
        """``config[key]`` converted with ``int()``."""
        raw = self.get(key, default)
        try:
            return None if raw is None else int(raw)
        except ValueError as err:
            raise ValueError(_bad_option(key, "integer")) from err


class RendezvousHandlerRegistry:
    """Maps a backend name to a ``creator(params) -> RendezvousHandler``."""

    def __init__(self):
        self._creators: dict[str, Callable] = {}

    def register(self, backend: str, creator: Callable) -> None:
        """Add ``creator`` under ``backend``; registering the same creator again is a no-op."""
        _check_backend_name(backend)
        known = self._creators.setdefault(backend, creator)
        _check(known is creator, f"The rendezvous backend '{backend}' cannot be registered "
                                 f"with '{creator}' as it is already registered with "
                                 f"'{known}'.")

    def create_handler(self, params: RendezvousParameters) -> RendezvousHandler:
        """Build the handler of ``params.backend`` and check it reports that backend."""
        wanted = params.backend
        creator = self._creators.get(wanted)
        _check(creator is not None, f"The rendezvous backend '{wanted}' is not registered. "
                                    "Did you forget to call `register`?")
        handler = creator(params)
        got = handler.get_backend()
        if got != wanted:
            raise RuntimeError(f"The rendezvous backend '{got}' does not match the requested "
                               f"backend '{wanted}'.")
        return handler


rendezvous_handler_registry = RendezvousHandlerRegistry()
