"""Sampler and Shuffler (``.shuffle``).

Shuffler keeps a buffer of ``buffer_size`` samples; once full, each new sample swaps
with a random one which is yielded; at the end the buffer drains in random order. Its
``random.Random`` is seeded per pass from ``set_seed`` or, failing that, from one int64
drawn from ember's global generator when the pass starts (as torch draws it).
"""
import random

import ember
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.iter.grouping import UnBatcherIterDataPipe
from ember.utils.data.sampler import SequentialSampler

__all__ = ["SamplerIterDataPipe", "ShufflerIterDataPipe"]


def _draw_seed(generator=None) -> int:
    """One int64 from ``generator`` (the global one when None)."""
    return int(ember.empty((), dtype=ember.int64).random_(generator=generator).item())


class SamplerIterDataPipe(IterDataPipe):
    """Yield ``datapipe``'s samples in the order of ``sampler(data_source=datapipe)``."""

    def __init__(self, datapipe, sampler=SequentialSampler, sampler_args=None,
                 sampler_kwargs=None):
        assert hasattr(datapipe, "__len__"), \
            "Sampler class requires input datapipe implemented `__len__`"
        self.datapipe = datapipe
        self.sampler_args = () if sampler_args is None else sampler_args
        self.sampler_kwargs = {} if sampler_kwargs is None else sampler_kwargs
        self.sampler = sampler(*self.sampler_args, data_source=self.datapipe,
                               **self.sampler_kwargs)

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self):
        if hasattr(self.sampler, "__len__"):
            return len(self.sampler)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(IterDataPipe):
    """Shuffle through a buffer of ``buffer_size`` samples (``unbatch_level`` unbatches
    first). ``set_shuffle(False)`` passes samples through; ``set_seed`` fixes the order."""

    def __init__(self, datapipe, *, buffer_size=10000, unbatch_level=0):
        assert buffer_size > 0, "buffer_size should be larger than 0"
        self.datapipe = datapipe if unbatch_level == 0 else \
            UnBatcherIterDataPipe(datapipe, unbatch_level=unbatch_level)
        self.buffer_size = buffer_size
        self._buffer = []
        self._enabled = True
        self._seed = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int):
        self._seed = seed
        return self

    def __iter__(self):
        if not self._enabled:
            yield from self.datapipe
            return
        for x in self.datapipe:
            if len(self._buffer) == self.buffer_size:
                idx = self._rng.randint(0, len(self._buffer) - 1)
                val, self._buffer[idx] = self._buffer[idx], x
                yield val
            else:
                self._buffer.append(x)
        while self._buffer:
            idx = self._rng.randint(0, len(self._buffer) - 1)
            yield self._buffer.pop(idx)

    def __len__(self):
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")

    def reset(self):
        self._buffer = []
        if self._enabled:
            if self._seed is None:
                self._seed = _draw_seed()
            self._rng.seed(self._seed)
            self._seed = None

    def __getstate__(self):
        state = (self.datapipe, self.buffer_size, self._enabled, self._seed, self._buffer,
                 self._rng.getstate(), self._valid_iterator_id,
                 self._number_of_samples_yielded)
        hook = IterDataPipe.getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        (self.datapipe, self.buffer_size, self._enabled, self._seed, self._buffer,
         rng_state, self._valid_iterator_id, self._number_of_samples_yielded) = state
        self._rng = random.Random()
        self._rng.setstate(rng_state)
