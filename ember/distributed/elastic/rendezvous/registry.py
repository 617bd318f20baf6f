"""The built-in rendezvous backends."""
from ember.distributed.elastic.rendezvous.api import (RendezvousParameters,
                                                      rendezvous_handler_registry)
from ember.distributed.elastic.rendezvous.store_rendezvous import (create_c10d_handler,
                                                                   create_static_handler)

__all__ = ["get_rendezvous_handler"]


def _unsupported(name):
    def create(params):
        raise NotImplementedError(f"rendezvous backend '{name}' is not supported by ember "
                                  "(use 'c10d' or 'static')")
    return create


rendezvous_handler_registry.register("c10d", create_c10d_handler)
rendezvous_handler_registry.register("static", create_static_handler)
for _name in ("etcd", "etcd-v2"):
    rendezvous_handler_registry.register(_name, _unsupported(_name))


def get_rendezvous_handler(params: RendezvousParameters):
    """The handler of ``params.backend`` built from ``params``."""
    return rendezvous_handler_registry.create_handler(params)
