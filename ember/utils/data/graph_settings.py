"""Settings applied across a pipeline graph: sharding, shuffling on/off, seeds."""
import inspect
import warnings

import ember
from ember.utils.data.datapipes.iter.sharding import SHARDING_PRIORITIES
from ember.utils.data.graph import traverse_dps

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_seed",
           "apply_shuffle_settings", "get_all_graph_pipes"]


def get_all_graph_pipes(graph):
    """Every pipe of ``graph`` once, depth first from the output end."""
    return _get_all_graph_pipes_helper(graph, set())


def _get_all_graph_pipes_helper(graph, id_cache):
    results = []
    for dp_id, (datapipe, sub_graph) in graph.items():
        if dp_id in id_cache:
            continue
        id_cache.add(dp_id)
        results.append(datapipe)
        results.extend(_get_all_graph_pipes_helper(sub_graph, id_cache))
    return results


def _is_sharding_datapipe(dp):
    return hasattr(dp, "apply_sharding") and callable(dp.apply_sharding)


def apply_sharding(datapipe, num_of_instances, instance_id,
                   sharding_group=SHARDING_PRIORITIES.DEFAULT):
    """Shard ``datapipe``: the sharding pipe on each path gets ``(num_of_instances,
    instance_id)``; two on one path raise RuntimeError."""
    graph = traverse_dps(datapipe)

    def helper(graph, prev_applied=None):
        for dp, sub_graph in graph.values():
            applied = None
            if _is_sharding_datapipe(dp):
                if prev_applied is not None:
                    raise RuntimeError("Sharding twice on a single pipeline is likely "
                                       "unintended and will cause data loss. Sharding already "
                                       f"applied to {prev_applied} while trying to apply to "
                                       f"{dp}")
                if len(inspect.signature(dp.apply_sharding).parameters) < 3:
                    dp.apply_sharding(num_of_instances, instance_id)
                else:
                    dp.apply_sharding(num_of_instances, instance_id,
                                      sharding_group=sharding_group)
                applied = dp
            helper(sub_graph, applied if applied is not None else prev_applied)

    helper(graph)
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


def _is_random_datapipe(dp):
    return callable(getattr(type(dp), "set_seed", None))


def apply_random_seed(datapipe, rng):
    """Give every pipe with ``set_seed`` a seed drawn (int64) from generator ``rng``, in
    graph order."""
    seen, random_pipes = set(), []
    for pipe in get_all_graph_pipes(traverse_dps(datapipe)):
        if id(pipe) not in seen and _is_random_datapipe(pipe):
            random_pipes.append(pipe)
            seen.add(id(pipe))
    for pipe in random_pipes:
        pipe.set_seed(int(ember.empty((), dtype=ember.int64).random_(generator=rng).item()))
    return datapipe
