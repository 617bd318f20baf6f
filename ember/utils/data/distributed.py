"""DistributedSampler (torch.utils.data.distributed)."""
from __future__ import annotations

import math

from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _dist_default(what):
    try:
        import ember.distributed as dist  # noqa: F401
    except ImportError:
        raise RuntimeError("Requires distributed package to be available") from None
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("Default process group has not been initialized, please make sure "
                           "to call init_process_group.")
    return dist.get_world_size() if what == "world" else dist.get_rank()


class DistributedSampler(Sampler):
    """The share of the dataset's indices that belongs to replica ``rank``."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = _dist_default("world")
        if rank is None:
            rank = _dist_default("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        import ember
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Set the epoch (reshuffles differently each epoch when ``shuffle=True``)."""
        self.epoch = epoch
