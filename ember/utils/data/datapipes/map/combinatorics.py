"""Shuffler (``.shuffle``) of a MapDataPipe: an IterDataPipe reading it in random order.

Each shuffling pass seeds the shared ``ShuffleState`` and draws one permutation with
``Random.sample``, read back to front (the order torch yields for the same seed).
"""
from ember.utils.data.datapipes._shared import ShuffleState, Shuffles
from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["ShufflerIterDataPipe"]


class ShufflerIterDataPipe(Shuffles, IterDataPipe):
    """``datapipe[i]`` for every ``i`` of ``indices`` (default ``range(len(datapipe))``),
    shuffled unless ``set_shuffle(False)``."""

    def __init__(self, datapipe, *, indices=None):
        self.datapipe = datapipe
        self.indices = indices if indices is not None else list(range(len(datapipe)))
        self._mix = ShuffleState()
        self._to_visit = []

    def reset(self):
        if self._mix.begin_pass():
            # read from the end: the last index drawn is visited first
            self._to_visit = self._mix.rng.sample(self.indices, len(self.indices))

    def __iter__(self):
        if not self._mix.on:
            yield from (self.datapipe[i] for i in self.indices)
            return
        visit = self._to_visit
        while visit:
            yield self.datapipe[visit.pop()]

    def __len__(self):
        return len(self.datapipe)


MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)
