"""Shuffler (``.shuffle``) of a MapDataPipe: an IterDataPipe over a random permutation.

Each pass draws a permutation with ``random.Random.sample`` (seeded from ``set_seed`` or
from ember's global generator) and reads it from the end, as torch does.
"""
import random

from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe
from ember.utils.data.datapipes.iter.combinatorics import _draw_seed

__all__ = ["ShufflerIterDataPipe"]


class ShufflerIterDataPipe(IterDataPipe):
    """``datapipe[i]`` for ``i`` in a shuffled ``indices`` (default: every index)."""

    def __init__(self, datapipe, *, indices=None):
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._enabled = True
        self._seed = None
        self._rng = random.Random()
        self._shuffled_indices = self.indices

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int):
        self._seed = seed
        return self

    def __iter__(self):
        if not self._enabled:
            for idx in self.indices:
                yield self.datapipe[idx]
        else:
            while self._shuffled_indices:
                idx = self._shuffled_indices.pop()
                yield self.datapipe[idx]

    def reset(self):
        if self._enabled:
            if self._seed is None:
                self._seed = _draw_seed()
            self._rng.seed(self._seed)
            self._seed = None
            self._shuffled_indices = self._rng.sample(self.indices, len(self.indices))

    def __len__(self):
        return len(self.datapipe)

    def __getstate__(self):
        state = (self.datapipe, self.indices, self._enabled, self._seed, self._rng.getstate(),
                 self._shuffled_indices, self._valid_iterator_id,
                 self._number_of_samples_yielded)
        hook = IterDataPipe.getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        (self.datapipe, self.indices, self._enabled, self._seed, rng_state,
         self._shuffled_indices, self._valid_iterator_id,
         self._number_of_samples_yielded) = state
        self._rng = random.Random()
        self._rng.setstate(rng_state)


MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)
