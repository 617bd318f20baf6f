"""``torch.distributed.optim.ZeroRedundancyOptimizer`` (ZeRO stage 1): each rank keeps the
optimizer state of a shard of the parameters only. ``step`` updates the local shard with a
local ``optimizer_class`` and then every owner broadcasts its updated parameters, so all
ranks end with the same parameters as an unsharded optimizer would give them.

Shards are built per parameter group: the group's parameters, largest first, each go to the
rank holding the fewest elements so far (the lowest rank on ties); a rank's local group
lists its parameters in that order, and an empty group keeps the local groups aligned.
"""
from __future__ import annotations

from ember import distributed as dist
from ember.distributed.algorithms.join import Join, JoinHook, Joinable
from ember.optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


def _shard(params, world_size):
    """[[params of rank 0], [params of rank 1], ...] of one group (greedy by size)."""
    sizes = [0] * world_size
    shards = [[] for _ in range(world_size)]
    for p in sorted(params, key=lambda t: t.numel(), reverse=True):
        r = sizes.index(min(sizes))
        shards[r].append(p)
        sizes[r] += p.numel()
    return shards


class _ZeROJoinHook(JoinHook):
    """A joined rank keeps stepping, so that its shard is updated and broadcast."""

    def __init__(self, zero):
        self.zero = zero

    def main_hook(self):
        self.zero.step()


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """``ZeroRedundancyOptimizer(params, optimizer_class, process_group=None,
    parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults)``; Joinable (in
    ``Join([ddp_model, optimizer])`` a rank out of inputs keeps stepping its shard)."""

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp=True (a DDP "
                                      "comm hook stepping each bucket) is not supported")
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_global_rank(self.process_group, self.rank) \
            if process_group is not None else self.rank
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self.optim = None
        self._all_state_dicts = None
        super().__init__(params, defaults)
        Joinable.__init__(self)
        self.optim = optimizer_class(self._local_groups(), **defaults)
        self._sync_hyperparameters()

    # ---- partition ------------------------------------------------------------------------
    def _shards(self):
        """Per group, the shards of all ranks."""
        return [_shard(g["params"], self.world_size) for g in self.param_groups]

    def _local_group(self, group, shard):
        local = {k: v for k, v in group.items() if k not in ("params", "param_names")}
        local["params"] = shard
        return local

    def _local_groups(self):
        return [self._local_group(g, s[self.rank])
                for g, s in zip(self.param_groups, self._shards())]

    def _owners(self):
        """{id(param): owning rank of the group} over all groups."""
        return {id(p): r for shards in self._shards()
                for r, shard in enumerate(shards) for p in shard}

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if self.optim is not None:      # after construction: a new (maybe empty) local group
            group = self.param_groups[-1]
            self.optim.add_param_group(
                self._local_group(group, _shard(group["params"], self.world_size)[self.rank]))

    def _sync_hyperparameters(self):
        """The options of the global groups (an LR scheduler edits those) into the local ones."""
        for g, local in zip(self.param_groups, self.optim.param_groups):
            for k, v in g.items():
                if k not in ("params", "param_names"):
                    local[k] = v

    # ---- step -----------------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """Step the local shard, then broadcast every parameter from its owner."""
        Join.notify_join_context(self)
        self._sync_hyperparameters()
        loss = self.optim.step(closure, **kwargs) if closure is not None else \
            self.optim.step(**kwargs)
        owners = self._owners()
        for g in self.param_groups:
            for p in g["params"]:
                src = owners[id(p)]
                if self.process_group is not dist.group.WORLD:
                    src = dist.get_global_rank(self.process_group, src)
                dist.broadcast(p.data, src=src, group=self.process_group)
        return loss

    # ---- Join -----------------------------------------------------------------------------
    def join_hook(self, **kwargs):
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        import ember
        return ember.device("cpu")

    @property
    def join_process_group(self):
        return self.process_group

    # ---- state ----------------------------------------------------------------------------
    def _global_index(self):
        return {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}

    def consolidate_state_dict(self, to=0):
        """Gather every rank's local optimizer state on rank ``to`` (call on all ranks)."""
        self._sync_hyperparameters()
        local = self.optim.state_dict()
        gathered = [None] * self.world_size if self.rank == to else None
        dst = to if self.process_group is dist.group.WORLD else \
            dist.get_global_rank(self.process_group, to)
        dist.gather_object(local, gathered, dst=dst, group=self.process_group)
        self._all_state_dicts = gathered if self.rank == to else None

    def state_dict(self):
        """The global state (global parameter indices), on the rank state was consolidated
        to."""
        if self._all_state_dicts is None:
            raise RuntimeError(f"Optimizer state has not been consolidated on this rank. Please "
                               f"call `consolidate_state_dict(to={self.rank})` on all ranks "
                               f"beforehand if you meant to save the global state.")
        index = self._global_index()
        shards = self._shards()
        state = {}
        for r, sd in enumerate(self._all_state_dicts):
            local_params = [p for group_shards in shards for p in group_shards[r]]
            for local_i, s in sd["state"].items():
                state[index[id(local_params[local_i])]] = s
        groups = []
        for g, local in zip(self.param_groups, self.optim.param_groups):
            entry = {k: v for k, v in local.items() if k != "params"}
            entry["params"] = [index[id(p)] for p in g["params"]]
            groups.append(entry)
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a global state dict: each rank keeps the state of its own shard."""
        params = [p for g in self.param_groups for p in g["params"]]
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            for k, v in saved.items():
                if k != "params":
                    g[k] = v
        local_index = {id(p): i for i, p in enumerate(
            p for local in self.optim.param_groups for p in local["params"])}
        state = {}
        for gi, s in state_dict["state"].items():
            i = local_index.get(id(params[int(gi)]))
            if i is not None:
                state[i] = s
        local_groups = []
        for local, saved in zip(self.optim.param_groups, state_dict["param_groups"]):
            entry = {k: v for k, v in saved.items() if k != "params"}
            entry["params"] = [local_index[id(p)] for p in local["params"]]
            local_groups.append(entry)
        self.optim.load_state_dict({"state": state, "param_groups": local_groups})
        self._sync_hyperparameters()
