"""Rendezvous API: how agents agree on a group (rank, world size) per round."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["RendezvousError", "RendezvousClosedError", "RendezvousTimeoutError",
           "RendezvousConnectionError", "RendezvousStateError",
           "RendezvousGracefulExitError", "RendezvousStoreInfo", "RendezvousInfo",
           "RendezvousHandler", "RendezvousParameters", "RendezvousHandlerRegistry",
           "rendezvous_handler_registry"]


class RendezvousError(Exception):
    """Base of the rendezvous errors."""


class RendezvousClosedError(RendezvousError):
    """The rendezvous is closed (the job ended or a node gave up)."""


class RendezvousTimeoutError(RendezvousError):
    """A rendezvous did not complete in time."""


class RendezvousConnectionError(RendezvousError):
    """The rendezvous backend could not be reached."""


class RendezvousStateError(RendezvousError):
    """The rendezvous state is corrupt."""


class RendezvousGracefulExitError(RendezvousError):
    """The node is not part of the rendezvous and exits gracefully."""


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


class RendezvousParameters:
    """Configuration of a rendezvous handler; ``**kwargs`` is the backend's ``config``
    (from ``--rdzv-conf k=v,...``)."""

    def __init__(self, backend: str, endpoint: str, run_id: str, min_nodes: int,
                 max_nodes: int, local_addr: str | None = None, **kwargs):
        if not backend:
            raise ValueError("The rendezvous backend name must be a non-empty string.")
        if min_nodes < 1:
            raise ValueError(f"The minimum number of rendezvous nodes ({min_nodes}) must be "
                             "greater than zero.")
        if max_nodes < min_nodes:
            raise ValueError(f"The maximum number of rendezvous nodes ({max_nodes}) must be "
                             "greater than or equal to the minimum number of rendezvous "
                             f"nodes ({min_nodes}).")
        self.backend = backend
        self.endpoint = endpoint
        self.run_id = run_id
        self.min_nodes = min_nodes
        self.max_nodes = max_nodes
        self.config = kwargs
        self.local_addr = local_addr

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    def get_as_bool(self, key: str, default: bool | None = None) -> bool | None:
        value = self.get(key, default)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if value in (0, 1):
                return bool(value)
        elif isinstance(value, str):
            if value.lower() in ("1", "true", "t", "yes", "y"):
                return True
            if value.lower() in ("0", "false", "f", "no", "n"):
                return False
        raise ValueError(f"The rendezvous configuration option '{key}' does not represent a "
                         "valid boolean value.")

    def get_as_int(self, key: str, default: int | None = None) -> int | None:
        value = self.get(key, default)
        if value is None:
            return value
        try:
            return int(value)
        except ValueError as e:
            raise ValueError(f"The rendezvous configuration option '{key}' does not represent "
                             "a valid integer value.") from e


class RendezvousHandlerRegistry:
    """Maps a backend name to a ``creator(params) -> RendezvousHandler``."""

    def __init__(self):
        self._registry: dict[str, Callable] = {}

    def register(self, backend: str, creator: Callable) -> None:
        if not backend:
            raise ValueError("The rendezvous backend name must be a non-empty string.")
        current = self._registry.get(backend)
        if current is not None and current is not creator:
            raise ValueError(f"The rendezvous backend '{backend}' cannot be registered with "
                             f"'{creator}' as it is already registered with '{current}'.")
        self._registry[backend] = creator

    def create_handler(self, params: RendezvousParameters) -> RendezvousHandler:
        try:
            creator = self._registry[params.backend]
        except KeyError:
            raise ValueError(f"The rendezvous backend '{params.backend}' is not registered. "
                             "Did you forget to call `register`?") from None
        handler = creator(params)
        if handler.get_backend() != params.backend:
            raise RuntimeError(f"The rendezvous backend '{handler.get_backend()}' does not "
                               f"match the requested backend '{params.backend}'.")
        return handler


rendezvous_handler_registry = RendezvousHandlerRegistry()
