"""Concater (``.concat``), Forker (``.fork``), Demultiplexer (``.demux``), Multiplexer
(``.mux``) and Zipper (``.zip``).

Fork and demux share one pass over their source among child pipes through a bounded
buffer: a child that runs more than ``buffer_size`` samples ahead of a sibling (one that
has not started counts as being at the start) raises BufferError.
"""
import copy as copymodule
import warnings
from collections import deque
from collections.abc import Sized

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._hook_iterator import _input_args_string
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn

__all__ = ["ConcaterIterDataPipe", "DemultiplexerIterDataPipe", "ForkerIterDataPipe",
           "MultiplexerIterDataPipe", "ZipperIterDataPipe"]


def _no_len(dp):
    return TypeError(f"{type(dp).__name__} instance doesn't have valid length")


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """The samples of each input pipe, one pipe after another."""

    def __init__(self, *datapipes):
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        if not all(isinstance(dp, Sized) for dp in self.datapipes):
            raise _no_len(self)
        return sum(len(dp) for dp in self.datapipes)


class _ChildDataPipe(IterDataPipe):
    """Instance ``instance_id`` of a fork or demux; iterating it pulls through the
    shared container ``main_datapipe``."""

    def __init__(self, main_datapipe, instance_id: int):
        self.main_datapipe = main_datapipe
        self.instance_id = instance_id
        self._epoch = None              # the container's pass this child last joined

    def __iter__(self):
        self.main_datapipe._child_begins(self)
        return self.main_datapipe.get_next_element_by_instance(self.instance_id)

    def _is_valid(self, iterator_id):
        return self._valid_iterator_id == iterator_id and \
            self._epoch == self.main_datapipe._valid_iterator_id

    def _invalidated_message(self):
        return ("This iterator has been invalidated, because a new iterator has been created "
                "from one of the ChildDataPipes of "
                f"{_input_args_string(self.main_datapipe)}.\nFor feedback regarding this "
                "single iterator per IterDataPipe constraint, feel free to comment on this "
                "issue: https://github.com/pytorch/data/issues/45.")

    def __len__(self):
        return self.main_datapipe.child_len(self.instance_id)


class _SharedPass(IterDataPipe):
    """What fork and demux containers share: passes (epochs) over ``main_datapipe``.

    A child joins the current pass unless it already took part in it; then a new pass
    starts (resetting the buffers, with a warning if some child had not finished) and the
    other children's iterators become invalid. ``_child_stop[i]`` is True while child
    ``i`` is not reading; the source iterator is dropped when it runs out.
    """

    def _init_pass(self, datapipe, num_instances, buffer_size, name):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} "
                             "is found")
        self.main_datapipe = datapipe
        self.num_instances = num_instances
        self.buffer_size = buffer_size
        if buffer_size < 0:
            warnings.warn(f"Unlimited buffer size is set for `{name}`, please be aware of "
                          "OOM at random places")
        self._clear()

    def _clear(self):
        self._source = None
        self._child_stop = [True] * self.num_instances
        self._clear_buffers()

    def _child_begins(self, child):
        if self._valid_iterator_id is None:
            self._valid_iterator_id = 0
        elif child._epoch == self._valid_iterator_id:      # its second pass: start anew
            self._valid_iterator_id += 1
            if not self._every_instance_exhausted():
                warnings.warn("Some child DataPipes are not exhausted when __iter__ is "
                              "called. We are resetting the buffer and each child DataPipe "
                              "will read from the start again.", UserWarning)
            self._clear()
        child._epoch = self._valid_iterator_id

    def get_next_element_by_instance(self, instance_id):
        if self._source is None and self._child_stop[instance_id]:
            self._source = iter(self.main_datapipe)
            self._on_restart()
            self._child_stop = [False] * self.num_instances
        try:
            while not self._child_stop[instance_id]:
                try:
                    item = self._next_for(instance_id)
                except StopIteration:
                    break
                yield item
        finally:           # also when an abandoned iterator is garbage collected, as torch's
            self._child_stop[instance_id] = True
            self._on_child_stop(instance_id)

    def _on_restart(self):
        pass

    def _on_child_stop(self, instance_id):
        if all(self._child_stop):
            self._clear()

    def reset(self):
        self._clear()

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_source", "_child_stop", "buffer", "child_buffers")}
        hook = IterDataPipe.getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._clear()


class _ForkerIterDataPipe(_SharedPass):
    """The container behind ``.fork``: one buffer of samples not yet read by every child."""

    def __init__(self, datapipe, num_instances, buffer_size=1000, copy=None):
        if copy is None:
            self.copy_fn = _identity
        elif copy == "shallow":
            self.copy_fn = copymodule.copy
        elif copy == "deep":
            self.copy_fn = copymodule.deepcopy
        else:
            raise ValueError(f"Unknown copy method `{copy}` requested, choose one of None, "
                             "`shallow` or `deep`.")
        self._init_pass(datapipe, num_instances, buffer_size, "fork")

    def _clear_buffers(self):
        # torch's pointers: _ptr[i] counts the reads child i attempted (its failed read at
        # the end included); buffer[0] is sample _slowest; _leading is the furthest read
        self.buffer = deque()
        self._ptr = [0] * self.num_instances
        self._slowest = 0
        self._leading = 0
        self._end = None

    def _next_for(self, instance_id):
        self._ptr[instance_id] += 1
        ptr = self._ptr[instance_id]
        if self._end is not None and ptr == self._end:
            raise StopIteration
        if self.buffer and ptr <= self._leading:
            value = self.buffer[ptr - self._slowest - 1]
        else:
            self._leading = ptr
            try:
                if self._source is None:
                    raise StopIteration
                value = next(self._source)
            except StopIteration:
                self._source, self._end = None, self._leading
                raise
            self.buffer.append(value)
        if ptr == self._slowest + 1:
            new_min = min(self._ptr)
            if self._slowest < new_min:
                self._slowest = new_min
                self.buffer.popleft()
        if 0 <= self.buffer_size < self._leading - self._slowest:
            raise BufferError("ForkerIterDataPipe buffer overflow,"
                              f"buffer size {self.buffer_size} is insufficient.")
        return self.copy_fn(value)

    def _every_instance_exhausted(self):
        return self._end is not None and all(p in (self._end, self._end - 1)
                                             for p in self._ptr)

    def _on_child_stop(self, instance_id):
        # as torch: once every child stopped, the source and the buffer go; the pointers
        # stay until a child starts a new pass (reset)
        if all(self._child_stop):
            self._source = None
            self.buffer.clear()

    def child_len(self, instance_id):
        return len(self.main_datapipe)

    def __len__(self):
        return len(self.main_datapipe)


def _identity(x):
    return x


@functional_datapipe("fork")
class ForkerIterDataPipe(IterDataPipe):
    """``num_instances`` pipes that each yield every sample of ``datapipe``."""

    def __new__(cls, datapipe, num_instances, buffer_size=1000, copy=None):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} "
                             "is found")
        if num_instances == 1:
            return datapipe
        container = _ForkerIterDataPipe(datapipe, num_instances, buffer_size, copy)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]


class _DemultiplexerIterDataPipe(_SharedPass):
    """The container behind ``.demux``: per-child queues of samples routed to them."""

    def __init__(self, datapipe, num_instances, classifier_fn, drop_none, buffer_size):
        self.classifier_fn = classifier_fn
        self.drop_none = drop_none
        self._init_pass(datapipe, num_instances, buffer_size, "demux")

    def _clear_buffers(self):
        self.child_buffers = [deque() for _ in range(self.num_instances)]
        self.current_buffer_usage = 0
        self._exhausted = False

    def _route(self, value):
        target = self.classifier_fn(value)
        if target is None and self.drop_none:
            return None
        if target is None or not 0 <= target < self.num_instances:
            raise ValueError("Output of the classification fn should be between 0 and "
                             f"{self.num_instances - 1}. {target} is returned.")
        return target

    def _next_for(self, instance_id):
        queue = self.child_buffers[instance_id]
        while True:
            if queue:
                self.current_buffer_usage -= 1
                return queue.popleft()
            if self._exhausted or self._source is None:
                raise StopIteration
            try:
                value = next(self._source)
            except StopIteration:
                self._exhausted, self._source = True, None
                raise
            target = self._route(value)
            if target is None:
                continue
            if target == instance_id:
                return value
            self.child_buffers[target].append(value)
            self.current_buffer_usage += 1
            if 0 <= self.buffer_size < self.current_buffer_usage:
                raise BufferError("DemultiplexerIterDataPipe buffer overflow, buffer size "
                                  f"{self.buffer_size} is insufficient.")

    def _every_instance_exhausted(self):
        return self._exhausted and not any(self.child_buffers)

    def _on_restart(self):
        self._exhausted = False

    def _on_child_stop(self, instance_id):
        # as torch: the source is dropped once every child stopped; a stopping child's
        # queue is emptied without giving back its share of the buffer budget
        if all(self._child_stop):
            self._source = None
        self.child_buffers[instance_id].clear()

    def child_len(self, instance_id):
        raise TypeError


@functional_datapipe("demux")
class DemultiplexerIterDataPipe(IterDataPipe):
    """``num_instances`` pipes; sample ``x`` goes to pipe ``classifier_fn(x)`` (``None``:
    dropped when ``drop_none``)."""

    def __new__(cls, datapipe, num_instances, classifier_fn, drop_none=False,
                buffer_size=1000):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} "
                             "is found")
        _check_unpickable_fn(classifier_fn)
        container = _DemultiplexerIterDataPipe(datapipe, num_instances, classifier_fn,
                                               drop_none, buffer_size)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]


@functional_datapipe("mux")
class MultiplexerIterDataPipe(IterDataPipe):
    """One sample from each input in turn; stops at the first incomplete round."""

    def __init__(self, *datapipes):
        self.datapipes = datapipes

    def __iter__(self):
        iterators = [iter(dp) for dp in self.datapipes]
        while iterators:
            round_ = []
            for it in iterators:
                try:
                    round_.append(next(it))
                except StopIteration:
                    return
            yield from round_

    def __len__(self):
        if not all(isinstance(dp, Sized) for dp in self.datapipes):
            raise _no_len(self)
        return min(len(dp) for dp in self.datapipes) * len(self.datapipes)


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of one sample from each input; as long as the shortest."""

    def __init__(self, *datapipes):
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for "
                            "`ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self):
        yield from zip(*self.datapipes)

    def __len__(self):
        if not all(isinstance(dp, Sized) for dp in self.datapipes):
            raise _no_len(self)
        return min(len(dp) for dp in self.datapipes)
