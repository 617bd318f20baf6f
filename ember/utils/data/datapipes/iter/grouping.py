"""Batcher (``.batch``), UnBatcher (``.unbatch``) and Grouper (``.groupby``)."""
from collections import defaultdict
from collections.abc import Sized

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import DataChunk, IterDataPipe
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn

__all__ = ["BatcherIterDataPipe", "GrouperIterDataPipe", "UnBatcherIterDataPipe"]


def _no_len(dp):
    return TypeError(f"{type(dp).__name__} instance doesn't have valid length")


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Lists of ``batch_size`` consecutive samples (the last shorter unless ``drop_last``)."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        assert batch_size > 0, "Batch size is required to be larger than 0!"
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self):
        batch = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self):
        if not isinstance(self.datapipe, Sized):
            raise _no_len(self)
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """Undo ``unbatch_level`` levels of batching (``-1``: flatten every list)."""

    def __init__(self, datapipe, unbatch_level=1):
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def __iter__(self):
        for element in self.datapipe:
            yield from self._dive(element, unbatch_level=self.unbatch_level)

    def _dive(self, element, unbatch_level):
        if unbatch_level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if unbatch_level == -1:
            if isinstance(element, (list, DataChunk)):
                for item in element:
                    yield from self._dive(item, unbatch_level=-1)
            else:
                yield element
        elif unbatch_level == 0:
            yield element
        elif isinstance(element, (list, DataChunk)):
            for item in element:
                yield from self._dive(item, unbatch_level=unbatch_level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             "DataPipe")


@functional_datapipe("groupby")
class GrouperIterDataPipe(IterDataPipe):
    """Batches of samples sharing ``group_key_fn(sample)``.

    A group is yielded when it reaches ``group_size``; when ``buffer_size`` samples are
    held, the biggest group goes (dropped if under ``guaranteed_group_size`` and
    ``drop_remaining``, an error if under it otherwise); what is left goes at the end.
    """

    def __init__(self, datapipe, group_key_fn, *, keep_key=False, buffer_size=10000,
                 group_size=None, guaranteed_group_size=None, drop_remaining=False):
        _check_unpickable_fn(group_key_fn)
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.max_buffer_size = buffer_size
        self.buffer_elements = defaultdict(list)
        self.curr_buffer_size = 0
        self.group_size = group_size
        self.guaranteed_group_size = None
        if group_size is not None and buffer_size is not None:
            assert 0 < group_size <= buffer_size, "group_size must be > 0 and <= buffer_size"
            self.guaranteed_group_size = group_size
        if guaranteed_group_size is not None:
            assert group_size is not None and 0 < guaranteed_group_size <= group_size, \
                ("guaranteed_group_size must be > 0 and <= group_size and group_size must be "
                 "set")
            self.guaranteed_group_size = guaranteed_group_size
        self.drop_remaining = drop_remaining
        self.wrapper_class = DataChunk

    def _remove_biggest_key(self):
        biggest_key, biggest_size = None, 0
        for key, items in self.buffer_elements.items():
            if len(items) > biggest_size:
                biggest_key, biggest_size = key, len(items)
        result = None
        if self.guaranteed_group_size is not None and biggest_size < \
                self.guaranteed_group_size and not self.drop_remaining:
            raise RuntimeError("Failed to group items", str(self.buffer_elements[biggest_key]))
        if self.guaranteed_group_size is None or biggest_size >= self.guaranteed_group_size:
            result = self.buffer_elements[biggest_key]
        self.curr_buffer_size -= biggest_size
        del self.buffer_elements[biggest_key]
        return biggest_key, result

    def _out(self, key, items):
        result = self.wrapper_class(items)
        return (key, result) if self.keep_key else result

    def __iter__(self):
        for x in self.datapipe:
            key = self.group_key_fn(x)
            self.buffer_elements[key].append(x)
            self.curr_buffer_size += 1
            if self.group_size is not None and self.group_size == \
                    len(self.buffer_elements[key]):
                items = self.buffer_elements.pop(key)
                self.curr_buffer_size -= len(items)
                yield self._out(key, items)
            if self.curr_buffer_size == self.max_buffer_size:
                # torch labels the evicted group with the key of the current sample
                _, items = self._remove_biggest_key()
                if items is not None:
                    yield self._out(key, items)
        for key in tuple(self.buffer_elements.keys()):
            items = self.buffer_elements.pop(key)
            self.curr_buffer_size -= len(items)
            yield self._out(key, items)

    def reset(self):
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("buffer_elements", "curr_buffer_size")}
        hook = IterDataPipe.getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)
