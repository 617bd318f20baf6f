"""``torch.distributed.algorithms``: the ``Join`` context for uneven inputs and DDP's
communication hooks (``ddp_comm_hooks``)."""
from ember.distributed.algorithms.join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
