"""``torch.distributed.nn``: modules across RPC workers (``RemoteModule``) and collectives
that autograd differentiates (``functional``)."""
from ember.distributed.nn import functional  # noqa: F401
from ember.distributed.nn.api.remote_module import RemoteModule  # noqa: F401
from ember.distributed.nn.functional import (all_gather, all_reduce, all_to_all,  # noqa: F401
                                             all_to_all_single, broadcast, gather, reduce,
                                             reduce_scatter, scatter)

__all__ = ["RemoteModule", "functional", "all_gather", "all_reduce", "all_to_all",
           "all_to_all_single", "broadcast", "gather", "reduce", "reduce_scatter", "scatter"]
