"""``torch.distributed.algorithms``: the ``Join`` context for uneven inputs, DDP's
communication hooks (``ddp_comm_hooks``) and periodic model averaging
(``model_averaging``)."""
from ember.distributed.algorithms.join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
