"""What the built-in pipes have in common: the length rule of a pipe over one source, the
error texts users see, and the shuffle switch + seed + RNG of both shufflers."""
import random

import ember
from ember.utils.data.datapipes.datapipe import IterDataPipe


def no_length(pipe) -> TypeError:
    """The TypeError ``len(pipe)`` raises when the pipe cannot know its length."""
    return TypeError(f"{type(pipe).__name__} instance doesn't have valid length")


def length_through(pipe, source) -> int:
    """``len(source)`` for a pipe as long as its source; ``no_length(pipe)`` otherwise."""
    if not hasattr(source, "__len__"):
        raise no_length(pipe)
    return len(source)


def int64_seed(generator=None) -> int:
    """One int64 drawn from ``generator`` (ember's global generator when None)."""
    return int(ember.empty((), dtype=ember.int64).random_(generator=generator).item())


class OverOneSource(IterDataPipe):
    """Base of a pipe reading one source pipe, ``self.datapipe``, whose length is the
    source's. Like every IterDataPipe its ``__iter__`` is hooked: ``iter()`` calls
    ``reset()`` and retires the previous iterator of the same pipe."""

    def __len__(self):
        return length_through(self, self.datapipe)


class ShuffleState:
    """A shuffler's switch (``on``), the seed fixed for its next pass (``next_seed``) and
    its ``random.Random``. Pickles with the pipe (RNG state included)."""

    def __init__(self):
        self.on = True
        self.next_seed = None
        self.rng = random.Random()

    def begin_pass(self) -> bool:
        """Seed the RNG for a pass: the seed given by ``set_seed`` (used once), else a fresh
        int64 from ember's global generator. Returns whether the pass shuffles."""
        if self.on:
            seed = int64_seed() if self.next_seed is None else self.next_seed
            self.next_seed = None
            self.rng.seed(seed)
        return self.on

    def below(self, n: int) -> int:
        """A uniform index in ``[0, n)`` (one ``randint(0, n - 1)`` call's worth of RNG)."""
        return self.rng.randint(0, n - 1)


class Shuffles:
    """``set_shuffle`` / ``set_seed`` for a pipe holding a ``ShuffleState`` in ``_mix``;
    ``graph_settings`` finds shufflers by these two methods."""

    def set_shuffle(self, shuffle=True):
        self._mix.on = shuffle
        return self

    def set_seed(self, seed: int):
        self._mix.next_seed = seed
        return self


def batch_count(n: int, batch_size: int, drop_last: bool) -> int:
    """How many batches ``n`` samples make (a short last one counts unless ``drop_last``)."""
    full, rest = divmod(n, batch_size)
    return full + (1 if rest and not drop_last else 0)


def declared_length(pipe, length: int) -> int:
    """A length given by the user (``-1``: unknown, so ``len`` raises ``no_length``)."""
    if length == -1:
        raise no_length(pipe)
    return length
