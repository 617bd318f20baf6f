"""ShardingFilter (``.sharding_filter``): keep this shard's share of the samples."""
import itertools
from enum import IntEnum

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import length_through
from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["SHARDING_PRIORITIES", "ShardingFilterIterDataPipe"]

# Sharding groups; a higher one splits each shard of the lower ones further.
SHARDING_PRIORITIES = IntEnum("SHARDING_PRIORITIES",
                              [("DEFAULT", 1), ("DISTRIBUTED", 2), ("MULTIPROCESSING", 3)],
                              module=__name__)


def _flatten_shards(shards):
    """``[(count, index)]`` from the outermost group inwards -> ``(count, index)`` overall,
    the innermost group varying fastest (``rank * num_workers + worker_id``)."""
    count, index = 1, 0
    for group_count, group_index in shards:
        count, index = count * group_count, index * group_count + group_index
    return count, index


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(IterDataPipe):
    """Samples ``instance_id, instance_id + num_of_instances, ...`` of the source, where the
    pair combines every group given to ``apply_sharding`` (only ``sharding_group_filter``'s
    when set)."""

    def __init__(self, source_datapipe, sharding_group_filter=None):
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups = {}
        self._recount()

    def apply_sharding(self, num_of_instances, instance_id,
                       sharding_group=SHARDING_PRIORITIES.DEFAULT):
        if not instance_id < num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than "
                             f"num_of_instances({num_of_instances})")
        is_default = sharding_group == SHARDING_PRIORITIES.DEFAULT
        if any((g == SHARDING_PRIORITIES.DEFAULT) != is_default for g in self.groups):
            raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self._recount()

    def _recount(self):
        wanted = self.sharding_group_filter
        shards = [self.groups[g] for g in sorted(self.groups) if wanted in (None, g)]
        self.num_of_instances, self.instance_id = _flatten_shards(shards)

    def __iter__(self):
        yield from itertools.islice(self.source_datapipe, self.instance_id, None,
                                    self.num_of_instances)

    def __len__(self):
        total = length_through(self, self.source_datapipe)
        return len(range(self.instance_id, total, self.num_of_instances))
