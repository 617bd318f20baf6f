"""torch.nn.parallel: DataParallel (a transparent wrapper: ember has one device) and the
import path of DistributedDataParallel."""
from ember.nn.parallel.data_parallel import DataParallel, data_parallel
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
