"""torch.nn.parallel: DataParallel (a transparent wrapper: ember has one device), the
scatter / gather / replicate / parallel_apply primitives (torch's CPU refusals) and the
import path of DistributedDataParallel."""
from ember.nn.parallel.data_parallel import DataParallel, data_parallel
from ember.nn.parallel.distributed import DistributedDataParallel
from ember.nn.parallel.scatter_gather import scatter, scatter_kwargs, gather
from ember.nn.parallel import scatter_gather  # noqa: F401
# the submodules first, then their functions over the names (as torch's package does)
from ember.nn.parallel.replicate import replicate
from ember.nn.parallel.parallel_apply import parallel_apply

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]
