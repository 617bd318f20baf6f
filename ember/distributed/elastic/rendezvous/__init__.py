"""Rendezvous of elastic agents: ``RendezvousParameters`` -> a handler from
``rendezvous_handler_registry`` (``c10d``, ``static``)."""
from ember.distributed.elastic.rendezvous.api import (  # noqa: F401
    RendezvousClosedError, RendezvousConnectionError, RendezvousError,
    RendezvousGracefulExitError, RendezvousHandler, RendezvousHandlerRegistry, RendezvousInfo,
    RendezvousParameters, RendezvousStateError, RendezvousStoreInfo, RendezvousTimeoutError,
    rendezvous_handler_registry)
from ember.distributed.elastic.rendezvous.registry import get_rendezvous_handler  # noqa: F401

__all__ = ["RendezvousClosedError", "RendezvousConnectionError", "RendezvousError",
           "RendezvousGracefulExitError", "RendezvousHandler", "RendezvousHandlerRegistry",
           "RendezvousInfo", "RendezvousParameters", "RendezvousStateError",
           "RendezvousStoreInfo", "RendezvousTimeoutError", "rendezvous_handler_registry",
           "get_rendezvous_handler"]
