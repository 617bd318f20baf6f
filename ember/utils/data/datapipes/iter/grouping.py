"""Batcher (``.batch``), UnBatcher (``.unbatch``) and Grouper (``.groupby``)."""
from collections import defaultdict

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import batch_count, length_through
from ember.utils.data.datapipes.datapipe import DataChunk, IterDataPipe
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn

__all__ = ["BatcherIterDataPipe", "GrouperIterDataPipe", "UnBatcherIterDataPipe"]


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Consecutive samples in lists of ``batch_size`` wrapped by ``wrapper_class``; the
    last list is shorter unless ``drop_last``."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        assert batch_size > 0, "Batch size is required to be larger than 0!"
        self.datapipe, self.wrapper_class = datapipe, wrapper_class
        self.batch_size, self.drop_last = batch_size, drop_last

    def __iter__(self):
        pending = []
        for sample in self.datapipe:
            pending.append(sample)
            if len(pending) < self.batch_size:
                continue
            yield self.wrapper_class(pending)
            pending = []
        if pending and not self.drop_last:
            yield self.wrapper_class(pending)

    def __len__(self):
        n = length_through(self, self.datapipe)
        return batch_count(n, self.batch_size, self.drop_last)


_NESTED = (list, DataChunk)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """Open ``unbatch_level`` levels of lists (``-1``: every level, ``0``: none)."""

    def __init__(self, datapipe, unbatch_level=1):
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def __iter__(self):
        for sample in self.datapipe:
            if self.unbatch_level < -1:
                raise ValueError("unbatch_level must be -1 or >= 0")
            yield from self._open(sample, self.unbatch_level)

    def _open(self, sample, levels):
        """``sample`` with ``levels`` more list levels opened (negative: all of them)."""
        if levels == 0:
            yield sample
        elif isinstance(sample, _NESTED):
            for inner in sample:
                yield from self._open(inner, levels - 1 if levels > 0 else levels)
        elif levels < 0:
            yield sample
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             "DataPipe")


@functional_datapipe("groupby")
class GrouperIterDataPipe(IterDataPipe):
    """Lists of samples with equal ``group_key_fn(sample)`` (``(key, list)`` with
    ``keep_key``).

    A group leaves as soon as it holds ``group_size`` samples. When ``buffer_size`` samples
    wait, the largest group leaves early: below ``guaranteed_group_size`` it is dropped
    (``drop_remaining``) or raises RuntimeError. Whatever waits at the end leaves then.
    """

    def __init__(self, datapipe, group_key_fn, *, keep_key=False, buffer_size=10000,
                 group_size=None, guaranteed_group_size=None, drop_remaining=False):
        _check_unpickable_fn(group_key_fn)
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.group_size = group_size
        self.drop_remaining = drop_remaining
        self.wrapper_class = DataChunk
        self._capacity = buffer_size
        self.guaranteed_group_size = _smallest_group(group_size, guaranteed_group_size,
                                                     buffer_size)
        self._clear()

    def _clear(self):
        self._waiting = defaultdict(list)
        self._n_waiting = 0

    def _take(self, key):
        members = self._waiting.pop(key)
        self._n_waiting -= len(members)
        return members

    def _evict_largest(self):
        """Remove the largest group; return it, or None when it is dropped as too small."""
        largest = max(self._waiting, key=lambda k: len(self._waiting[k]))
        members = self._take(largest)
        floor = self.guaranteed_group_size
        if floor is None or len(members) >= floor:
            return members
        if not self.drop_remaining:
            raise RuntimeError("Failed to group items", str(members))
        return None

    def _emit(self, key, members):
        group = self.wrapper_class(members)
        return (key, group) if self.keep_key else group

    def __iter__(self):
        for sample in self.datapipe:
            key = self.group_key_fn(sample)
            self._waiting[key].append(sample)
            self._n_waiting += 1
            if len(self._waiting[key]) == self.group_size:
                yield self._emit(key, self._take(key))
            if self._n_waiting == self._capacity:
                evicted = self._evict_largest()
                if evicted is not None:      # torch labels it with the current sample's key
                    yield self._emit(key, evicted)
        for key in list(self._waiting):
            yield self._emit(key, self._take(key))

    def reset(self):
        self._clear()

    def __getstate__(self):
        kept = {k: v for k, v in self.__dict__.items() if k not in ("_waiting", "_n_waiting")}
        hook = IterDataPipe.getstate_hook
        return kept if hook is None else hook(kept)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._clear()


def _smallest_group(group_size, guaranteed_group_size, buffer_size):
    """Check the size arguments; the least size a group may leave with (or None)."""
    bounded = group_size is not None and buffer_size is not None
    if bounded:
        assert 0 < group_size <= buffer_size, "group_size must be > 0 and <= buffer_size"
    if guaranteed_group_size is None:
        return group_size if bounded else None
    assert group_size is not None and 0 < guaranteed_group_size <= group_size, \
        "guaranteed_group_size must be > 0 and <= group_size and group_size must be set"
    return guaranteed_group_size
