"""ShardingFilter (``.sharding_filter``): keep every n-th sample for this shard."""
from enum import IntEnum

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["SHARDING_PRIORITIES", "ShardingFilterIterDataPipe"]


class SHARDING_PRIORITIES(IntEnum):
    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


class _ShardingIterDataPipe(IterDataPipe):
    def apply_sharding(self, num_of_instances, instance_id, sharding_group):
        raise NotImplementedError


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(_ShardingIterDataPipe):
    """Sample ``i`` is kept when ``i % num_of_instances == instance_id``.

    Shards of several groups nest: the highest priority group (multiprocessing) varies
    fastest, so the global instance id is ``rank * num_workers + worker_id``.
    """

    def __init__(self, source_datapipe, sharding_group_filter=None):
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups = {}
        self.num_of_instances = 1
        self.instance_id = 0
        self._update_num_of_instances()

    def apply_sharding(self, num_of_instances, instance_id,
                       sharding_group=SHARDING_PRIORITIES.DEFAULT):
        if instance_id >= num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than "
                             f"num_of_instances({num_of_instances})")
        default = SHARDING_PRIORITIES.DEFAULT
        mixes = (self.groups and default not in self.groups) if sharding_group == default \
            else default in self.groups
        if mixes:
            raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self._update_num_of_instances()

    def _update_num_of_instances(self):
        groups = [self.groups[key] for key in sorted(self.groups)
                  if self.sharding_group_filter is None or key == self.sharding_group_filter]
        self.num_of_instances, self.instance_id = 1, 0
        for group_num, group_id in reversed(groups):
            self.instance_id += self.num_of_instances * group_id
            self.num_of_instances *= group_num

    def __iter__(self):
        for i, item in enumerate(self.source_datapipe):
            if i % self.num_of_instances == self.instance_id:
                yield item

    def __len__(self):
        if hasattr(self.source_datapipe, "__len__"):
            n = len(self.source_datapipe)
            return n // self.num_of_instances + \
                (1 if self.instance_id < n % self.num_of_instances else 0)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
