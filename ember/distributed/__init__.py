"""``torch.distributed`` on MPI (mpi4py, the optional extra ``distributed``).

Process groups and collectives (``distributed_c10d.py``, ``_collectives.py``) run on the
engine in ``_mpi.py``; the key-value stores and ``init_method`` rendezvous are in
``store.py`` and ``rendezvous.py``. Backend "gloo" and "mpi" are both ember's MPI engine.
"""
from ember.distributed._errors import (DistBackendError, DistError,  # noqa: F401
                                       DistNetworkError, DistStoreError,
                                       QueueEmptyError)
from ember.distributed.distributed_c10d import *  # noqa: F401,F403
from ember.distributed.distributed_c10d import (_make_nccl_premul_sum,  # noqa: F401
                                                _World, _world)
from ember.distributed.rendezvous import (  # noqa: F401
    register_rendezvous_handler, rendezvous)
from ember.distributed.store import (  # noqa: F401
    FileStore, HashStore, PrefixStore, Store, TCPStore)


_SUBPACKAGES = ("algorithms", "elastic", "rpc", "autograd", "optim", "launcher", "nn",
                "pipelining")


def __getattr__(name):
    if name in _SUBPACKAGES:
        import importlib
        return importlib.import_module(f"ember.distributed.{name}")
    if name == "GradBucket":                 # defined beside DDP, which uses it
        from ember.nn.parallel.distributed import GradBucket
        return GradBucket
    raise AttributeError(f"module 'ember.distributed' has no attribute '{name}'")
