"""Settings applied across a pipeline graph: sharding, shuffling on/off, seeds."""
import inspect
import warnings

from ember.utils.data.datapipes._shared import int64_seed
from ember.utils.data.datapipes.iter.sharding import SHARDING_PRIORITIES
from ember.utils.data.graph import traverse_dps

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_seed",
           "apply_shuffle_settings", "get_all_graph_pipes"]


def get_all_graph_pipes(graph):
    """Every pipe of ``graph`` once, depth first from the output end."""
    seen, ordered = set(), []

    def visit(level):
        for key, (pipe, sources) in level.items():
            if key not in seen:
                seen.add(key)
                ordered.append(pipe)
                visit(sources)

    visit(graph)
    return ordered


def _can_shard(pipe):
    return callable(getattr(pipe, "apply_sharding", None))


def _shard(pipe, num_of_instances, instance_id, sharding_group):
    """``pipe.apply_sharding``, passing the group only to pipes that take one."""
    if len(inspect.signature(pipe.apply_sharding).parameters) >= 3:
        pipe.apply_sharding(num_of_instances, instance_id, sharding_group=sharding_group)
    else:
        pipe.apply_sharding(num_of_instances, instance_id)


def apply_sharding(datapipe, num_of_instances, instance_id,
                   sharding_group=SHARDING_PRIORITIES.DEFAULT):
    """Shard ``datapipe``: the sharding pipe on each path gets ``(num_of_instances,
    instance_id)``; two on one path raise RuntimeError."""
    def walk(level, sharded_below):
        # ``sharded_below``: the pipe already sharded between here and the output, if any
        for pipe, sources in level.values():
            if _can_shard(pipe):
                if sharded_below is not None:
                    raise RuntimeError(
                        "Sharding twice on a single pipeline is likely unintended and will "
                        f"cause data loss. Sharding already applied to {sharded_below} while "
                        f"trying to apply to {pipe}")
                _shard(pipe, num_of_instances, instance_id, sharding_group)
            walk(sources, pipe if _can_shard(pipe) else sharded_below)

    walk(traverse_dps(datapipe), None)
    return datapipe


def _is_shuffle_datapipe(dp):
    return all(callable(getattr(type(dp), name, None)) for name in ("set_shuffle", "set_seed"))


def apply_shuffle_settings(datapipe, shuffle=None):
    """Turn every shuffler on or off (``None``: leave them); with ``shuffle=True`` and no
    shuffler, one is appended (with a warning)."""
    if shuffle is None:
        return datapipe
    shufflers = [p for p in get_all_graph_pipes(traverse_dps(datapipe))
                 if _is_shuffle_datapipe(p)]
    if not shufflers and shuffle:
        warnings.warn("`shuffle=True` was set, but the datapipe does not contain a "
                      "`Shuffler`. Adding one at the end. Be aware that the default buffer "
                      "size might not be sufficient for your task.")
        datapipe = datapipe.shuffle()
        shufflers = [datapipe]
    for shuffler in shufflers:
        shuffler.set_shuffle(shuffle)
    return datapipe


def apply_shuffle_seed(datapipe, rng):
    warnings.warn("`apply_shuffle_seed` is deprecated since 1.12 and will be removed in the "
                  "future releases.\nPlease use `apply_random_seed` instead.")
    return apply_random_seed(datapipe, rng)


def apply_random_seed(datapipe, rng):
    """Give every pipe with ``set_seed`` a seed drawn (int64) from generator ``rng``, in
    graph order."""
    seeded = [p for p in get_all_graph_pipes(traverse_dps(datapipe))
              if callable(getattr(type(p), "set_seed", None))]
    for pipe in seeded:
        pipe.set_seed(int64_seed(rng))
    return datapipe
