"""traverse_dps: the graph of a pipeline, ``{id(dp): (dp, {id(src): (src, {...})})}``.

A pipe's sources are the pipes found in its pickled state (so ``__getstate__`` decides
what counts), found without pickling them in turn; functions are not pickled at all.
"""
import io
import pickle
import types
import warnings

from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["traverse", "traverse_dps"]

DataPipe = (IterDataPipe, MapDataPipe)


def _stub():
    return None


class _SourceFinder(pickle.Pickler):
    """Pickles ``root`` into nothing, noting the other pipes its state holds."""

    def __init__(self, root):
        super().__init__(io.BytesIO(), protocol=pickle.HIGHEST_PROTOCOL)
        self.root, self.found = root, []

    def reducer_override(self, obj):
        if obj is self.root:
            return NotImplemented
        if isinstance(obj, DataPipe):
            if all(obj is not f for f in self.found):
                self.found.append(obj)
            return _stub, ()
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                            type, io.IOBase)):
            return _stub, ()
        return NotImplemented


def _walk_state(obj, found, seen):
    """Fallback when pickling fails: look through attributes and containers."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, DataPipe):
        if all(obj is not f for f in found):
            found.append(obj)
        return
    if isinstance(obj, dict):
        for v in obj.values():
            _walk_state(v, found, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _walk_state(v, found, seen)


def _list_connected_datapipes(scan_obj):
    finder = _SourceFinder(scan_obj)
    try:
        finder.dump(scan_obj)
        return finder.found
    except Exception:        # noqa: BLE001 - unpicklable state: look at attributes instead
        found, seen = [], {id(scan_obj)}
        state = scan_obj.__getstate__() if hasattr(scan_obj, "__getstate__") else vars(scan_obj)
        _walk_state(state if state is not None else vars(scan_obj), found, seen)
        return found


def _traverse_helper(datapipe, id_cache):
    if not isinstance(datapipe, DataPipe):
        raise RuntimeError(f"Expected `IterDataPipe` or `MapDataPipe`, but {type(datapipe)} "
                           "is found")
    dp_id = id(datapipe)
    if dp_id in id_cache:
        return {dp_id: (datapipe, {})}
    id_cache = id_cache | {dp_id}
    children = {}
    for source in _list_connected_datapipes(datapipe):
        children.update(_traverse_helper(source, id_cache))
    return {dp_id: (datapipe, children)}


def traverse_dps(datapipe):
    """The pipeline ending at ``datapipe`` as nested ``{id: (pipe, sources)}``; a pipe seen
    again on the same path (a cycle) appears with no sources."""
    return _traverse_helper(datapipe, set())


def traverse(datapipe, only_datapipe=None):
    """Deprecated form of ``traverse_dps`` (same result)."""
    msg = ("`traverse` function and will be removed after 1.13. Please use `traverse_dps` "
           "instead.")
    if not only_datapipe:
        msg += " And, the behavior will be changed to the equivalent of `only_datapipe=True`."
    warnings.warn(msg, FutureWarning)
    return traverse_dps(datapipe)
