"""Sampler and Shuffler (``.shuffle``).

Shuffler holds up to ``buffer_size`` samples. Once full, each arriving sample takes the
place of a randomly chosen held one, which is yielded; when the source ends the held
samples leave in random order. The RNG is seeded per pass (see ``ShuffleState``), so a
seeded pass reproduces torch's order.
"""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import (OverOneSource, ShuffleState, Shuffles,
                                                int64_seed, no_length)
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.iter.grouping import UnBatcherIterDataPipe
from ember.utils.data.sampler import SequentialSampler

__all__ = ["SamplerIterDataPipe", "ShufflerIterDataPipe"]

_draw_seed = int64_seed      # the name other ember modules import


class SamplerIterDataPipe(IterDataPipe):
    """The indices/samples of ``sampler(*sampler_args, data_source=datapipe,
    **sampler_kwargs)``, in its order."""

    def __init__(self, datapipe, sampler=SequentialSampler, sampler_args=None,
                 sampler_kwargs=None):
        assert hasattr(datapipe, "__len__"), \
            "Sampler class requires input datapipe implemented `__len__`"
        self.datapipe = datapipe
        self.sampler_args = sampler_args if sampler_args is not None else ()
        self.sampler_kwargs = sampler_kwargs if sampler_kwargs is not None else {}
        self.sampler = sampler(*self.sampler_args, **self.sampler_kwargs,
                               data_source=datapipe)

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self):
        return length_of_sampler(self)


def length_of_sampler(pipe):
    if not hasattr(pipe.sampler, "__len__"):
        raise no_length(pipe)
    return len(pipe.sampler)


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(Shuffles, OverOneSource):
    """Buffered shuffle of ``datapipe`` (unbatched ``unbatch_level`` times first).
    ``set_shuffle(False)`` passes samples through in order; ``set_seed(s)`` fixes the
    next pass's order."""

    def __init__(self, datapipe, *, buffer_size=10000, unbatch_level=0):
        assert buffer_size > 0, "buffer_size should be larger than 0"
        if unbatch_level:
            datapipe = UnBatcherIterDataPipe(datapipe, unbatch_level=unbatch_level)
        self.datapipe = datapipe
        self.buffer_size = buffer_size
        self._held = []
        self._mix = ShuffleState()

    def reset(self):
        self._held = []
        self._mix.begin_pass()

    def __iter__(self):
        if not self._mix.on:
            yield from self.datapipe
            return
        held, pick = self._held, self._mix.below
        for sample in self.datapipe:
            if len(held) < self.buffer_size:
                held.append(sample)
                continue
            slot = pick(len(held))
            out = held[slot]
            held[slot] = sample
            yield out
        while held:
            yield held.pop(pick(len(held)))
