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

    def __iter__(self):
        return self.main_datapipe.get_next_element_by_instance(self.instance_id)

    def _invalidated_message(self):
        return ("This iterator has been invalidated, because a new iterator has been created "
                "from one of the ChildDataPipes of "
                f"{_input_args_string(self.main_datapipe)}.\nFor feedback regarding this "
                "single iterator per IterDataPipe constraint, feel free to comment on this "
                "issue: https://github.com/pytorch/data/issues/45.")

    def __len__(self):
        return self.main_datapipe.child_len(self.instance_id)


class _SharedPass(IterDataPipe):
    """What fork and demux containers share: one pass over ``main_datapipe`` that children
    join; a child starting again restarts the pass for everyone."""

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
        self._started = [False] * self.num_instances
        self._finished = [False] * self.num_instances
        self._clear_buffers()

    def _join(self, instance_id):
        """Child ``instance_id`` starts reading: join the pass, or begin a new one."""
        if self._source is not None and self._started[instance_id]:
            if not all(self._finished):
                warnings.warn("Some child DataPipes are not exhausted when __iter__ is "
                              "called. We are resetting the buffer and each child DataPipe "
                              "will read from the start again.", UserWarning)
            self._clear()
        if self._source is None:
            self._clear()
            self._source = iter(self.main_datapipe)
        self._started[instance_id] = True

    def _leave(self, instance_id):
        self._finished[instance_id] = True
        if all(self._finished):
            self._clear()

    def get_next_element_by_instance(self, instance_id):
        self._join(instance_id)
        try:
            yield from self._serve(instance_id)
        finally:
            if self._started[instance_id]:
                self._leave(instance_id)

    def reset(self):
        self._clear()

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_source", "_started", "_finished", "buffer", "child_buffers")}
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
        self.buffer = deque()
        self._offset = 0                 # index in the pass of buffer[0]
        self._pos = [0] * self.num_instances
        self._end = None                 # length of the pass once the source ran out

    def _serve(self, instance_id):
        while True:
            pos = self._pos[instance_id]
            if pos < self._offset + len(self.buffer):
                value = self.buffer[pos - self._offset]
            elif self._end is not None:
                return
            else:
                try:
                    value = next(self._source)
                except StopIteration:
                    self._end = pos
                    return
                self.buffer.append(value)
            self._pos[instance_id] = pos + 1
            slowest = min(self._pos)
            while self.buffer and self._offset < slowest:
                self.buffer.popleft()
                self._offset += 1
            if 0 <= self.buffer_size < len(self.buffer):
                raise BufferError("ForkerIterDataPipe buffer overflow,"
                                  f"buffer size {self.buffer_size} is insufficient.")
            yield self.copy_fn(value)

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

    def _serve(self, instance_id):
        queue = self.child_buffers[instance_id]
        while True:
            if queue:
                self.current_buffer_usage -= 1
                yield queue.popleft()
                continue
            if self._exhausted:
                return
            try:
                value = next(self._source)
            except StopIteration:
                self._exhausted = True
                return
            target = self._route(value)
            if target is None:
                continue
            if target == instance_id:
                yield value
                continue
            self.child_buffers[target].append(value)
            self.current_buffer_usage += 1
            if 0 <= self.buffer_size < self.current_buffer_usage:
                raise BufferError("DemultiplexerIterDataPipe buffer overflow, buffer size "
                                  f"{self.buffer_size} is insufficient.")

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
