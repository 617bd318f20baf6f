"""DistributedSampler: each of ``num_replicas`` processes reads its own share of the data."""
import math

import ember
from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _from_process_group(what):
    try:
        import ember.distributed as dist
    except ImportError:
        raise RuntimeError("Requires distributed package to be available") from None
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return dist.get_world_size() if what == "world" else dist.get_rank()


class DistributedSampler(Sampler):
    """Indices ``rank, rank + num_replicas, ...`` of a (shuffled, padded or trimmed)
    index list, so every replica gets the same number of samples."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = _from_process_group("world")
        if rank is None:
            rank = _from_process_group("rank")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        vars(self).update(dataset=dataset, num_replicas=num_replicas, rank=rank, epoch=0,
                          drop_last=drop_last, shuffle=shuffle, seed=seed)
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            order = ember.randperm(n, generator=g).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            order = order[:self.total_size]
        else:               # pad by repeating the list from its start
            missing = self.total_size - len(order)
            order += (order * math.ceil(missing / len(order)))[:missing] if missing else []
        assert len(order) == self.total_size
        mine = order[self.rank:self.total_size:self.num_replicas]
        assert len(mine) == self.num_samples
        return iter(mine)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use a different shuffle for each epoch (the seed is ``seed + epoch``)."""
        self.epoch = epoch
