"""Caching pipes: InMemoryCacheHolder, OnDiskCacheHolder and its ``end_caching``."""
import hashlib
import inspect
import os
import sys
from collections import deque

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.graph import traverse_dps
from ember.utils.data.graph_settings import get_all_graph_pipes

__all__ = ["EndOnDiskCacheHolderIterDataPipe", "InMemoryCacheHolderIterDataPipe",
           "OnDiskCacheHolderIterDataPipe"]


@functional_datapipe("in_memory_cache")
class InMemoryCacheHolderIterDataPipe(IterDataPipe):
    """The first pass reads the source and keeps what it yields (the last ``size``
    megabytes of it when given); later passes replay the cache and read the source only
    for the samples that did not fit."""

    def __init__(self, source_dp, size=None):
        self.source_dp = source_dp
        self.size = None if size is None else size * 1024 * 1024
        self.cache = None
        self.idx = 0            # samples at the start that were evicted

    def __iter__(self):
        if self.cache is not None:
            if self.idx > 0:
                for idx, data in enumerate(self.source_dp):
                    if idx >= self.idx:
                        break
                    yield data
            yield from self.cache
            return
        cache, idx, used = deque(), 0, 0
        for data in self.source_dp:
            cache.append(data)
            used += sys.getsizeof(data)
            while self.size is not None and used > self.size and cache:
                used -= sys.getsizeof(cache.popleft())
                idx += 1
            yield data
        self.cache, self.idx = cache, idx

    def __len__(self):
        return len(self.source_dp)


def _paths(filepath_fn, data):
    """The cache file path(s) of ``data`` as a list."""
    paths = data if filepath_fn is None else filepath_fn(data)
    if isinstance(paths, str):
        return [paths]
    if inspect.isgenerator(paths) or isinstance(paths, (list, tuple)):
        return list(paths)
    raise TypeError(f"filepath_fn should return a str or a list/tuple/generator of str, "
                    f"got {type(paths)}")


def _hash_of(path, hash_type):
    digest = hashlib.new(hash_type)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functional_datapipe("on_disk_cache")
class OnDiskCacheHolderIterDataPipe(IterDataPipe):
    """Start of a cached section that ends at ``.end_caching()``.

    For each source sample, ``filepath_fn(sample)`` names its cache file(s). When they all
    exist (and match ``hash_dict`` and ``extra_check_fn``) ``end_caching`` yields those
    paths directly; otherwise the sample flows on through the section, whose output
    ``end_caching`` writes to disk.
    """

    def __init__(self, source_datapipe, filepath_fn=None, hash_dict=None, hash_type="sha256",
                 extra_check_fn=None):
        if hash_type not in ("sha256", "md5"):
            raise ValueError("Invalid hash_type requested, should be one of ['sha256', "
                             "'md5']")
        self.source_datapipe = source_datapipe
        self.filepath_fn = filepath_fn
        self.hash_dict = hash_dict
        self.hash_type = hash_type
        self.extra_check_fn = extra_check_fn
        self._todo = None

    def _is_cached(self, data):
        for path in _paths(self.filepath_fn, data):
            if not os.path.exists(path):
                return False
            if self.hash_dict is not None and path in self.hash_dict and \
                    _hash_of(path, self.hash_type) != self.hash_dict[path]:
                return False
            if self.extra_check_fn is not None and not self.extra_check_fn(path):
                return False
        return True

    def _partition(self):
        """Read the source: return the cached samples' paths, keep the rest to yield."""
        cached, self._todo = [], []
        for data in self.source_datapipe:
            if self._is_cached(data):
                cached.extend(_paths(self.filepath_fn, data))
            else:
                self._todo.append(data)
        return cached

    def __iter__(self):
        if self._todo is None:          # iterated on its own: nothing is skipped
            yield from self.source_datapipe
            return
        todo, self._todo = self._todo, None
        yield from todo

    def _end_caching(self):
        raise NotImplementedError("on_disk_cache is closed by .end_caching()")


@functional_datapipe("end_caching")
class EndOnDiskCacheHolderIterDataPipe(IterDataPipe):
    """End of a cached section: yields the paths of cached samples first, then writes
    each ``(metadata, data)`` the section produces to ``filepath_fn(metadata)`` (default:
    the metadata itself; ``same_filepath_fn``: the holder's) with ``mode`` and yields that
    path. ``data`` may be bytes/str or a stream (read, unless ``skip_read``)."""

    def __init__(self, datapipe, mode="wb", filepath_fn=None, *, same_filepath_fn=False,
                 skip_read=False, timeout=300):
        holders = [p for p in get_all_graph_pipes(traverse_dps(datapipe))
                   if isinstance(p, OnDiskCacheHolderIterDataPipe)]
        if not holders:
            raise RuntimeError("Expected `OnDiskCacheHolder` existing in pipeline when "
                               "`end_caching` is invoked")
        self.datapipe = datapipe
        self._holder = holders[0]
        if same_filepath_fn and filepath_fn is not None:
            raise ValueError("`filepath_fn` is mutually exclusive with `same_filepath_fn`")
        self.filepath_fn = self._holder.filepath_fn if same_filepath_fn else filepath_fn
        self.mode = mode
        self.skip_read = skip_read
        self.timeout = timeout

    def _write(self, meta, data):
        path = meta if self.filepath_fn is None else self.filepath_fn(meta)
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path, self.mode) as f:
            if hasattr(data, "read"):
                for chunk in iter(lambda: data.read(1 << 20), b"" if "b" in self.mode else ""):
                    f.write(chunk)
            else:
                f.write(data)
        holder = self._holder
        if holder.hash_dict is not None and path in holder.hash_dict and \
                _hash_of(path, holder.hash_type) != holder.hash_dict[path]:
            raise RuntimeError(f"The hash {_hash_of(path, holder.hash_type)} of {path} does "
                               f"not match. Delete the file manually and retry.")
        return path

    def __iter__(self):
        yield from self._holder._partition()
        for meta, data in self.datapipe:
            yield self._write(meta, data)
