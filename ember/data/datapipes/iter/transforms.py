"""Stream-shaping pipes: Cycler, Header, Enumerator, IndexAdder, FlatMapper,
InBatchShuffler, BucketBatcher and SampleMultiplexer."""
import random
import warnings
from collections.abc import Sized

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import DataChunk, IterDataPipe
from ember.utils.data.datapipes.iter.callable import _columns_in
from ember.utils.data.datapipes.iter.combinatorics import _draw_seed
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn

__all__ = ["BucketBatcherIterDataPipe", "CyclerIterDataPipe", "EnumeratorIterDataPipe",
           "FlatMapperIterDataPipe", "HeaderIterDataPipe", "InBatchShufflerIterDataPipe",
           "IndexAdderIterDataPipe", "SampleMultiplexerDataPipe"]


@functional_datapipe("cycle")
class CyclerIterDataPipe(IterDataPipe):
    """The source ``count`` times over (``None``: forever)."""

    def __init__(self, source_datapipe, count=None):
        self.source_datapipe = source_datapipe
        self.count = count
        if count is not None and count < 0:
            raise ValueError(f"Expected non-negative count, got {count}")

    def __iter__(self):
        i = 0
        while self.count is None or i < self.count:
            yield from self.source_datapipe
            i += 1

    def __len__(self):
        if self.count is None:
            raise TypeError(f"This {type(self).__name__} instance cycles forever, and "
                            "therefore doesn't have valid length")
        return self.count * len(self.source_datapipe)


@functional_datapipe("header")
class HeaderIterDataPipe(IterDataPipe):
    """The first ``limit`` samples."""

    def __init__(self, source_datapipe, limit=10):
        self.source_datapipe = source_datapipe
        self.limit = limit

    def __iter__(self):
        if self.limit is None:
            yield from self.source_datapipe
            return
        for i, value in enumerate(self.source_datapipe):
            if i >= self.limit:
                break
            yield value

    def __len__(self):
        if isinstance(self.source_datapipe, Sized):
            n = len(self.source_datapipe)
            return n if self.limit is None else min(n, self.limit)
        if self.limit is None:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        warnings.warn("The length of this HeaderIterDataPipe is inferred to be equal to its "
                      "limit. The actual value may be smaller if the actual length of "
                      "source_datapipe is smaller than the limit.")
        return self.limit


@functional_datapipe("enumerate")
class EnumeratorIterDataPipe(IterDataPipe):
    """``(index, sample)``, counting from ``starting_index``."""

    def __init__(self, source_datapipe, starting_index=0):
        self.source_datapipe = source_datapipe
        self.starting_index = starting_index

    def __iter__(self):
        yield from enumerate(self.source_datapipe, self.starting_index)

    def __len__(self):
        return len(self.source_datapipe)


@functional_datapipe("add_index")
class IndexAdderIterDataPipe(IterDataPipe):
    """Each dict sample with ``sample[index_name] = its position``."""

    def __init__(self, source_datapipe, index_name="index"):
        self.source_datapipe = source_datapipe
        self.index_name = index_name

    def __iter__(self):
        for i, data in enumerate(self.source_datapipe):
            if not isinstance(data, dict):
                raise RuntimeError("We require input data to IndexAdderIterDataPipe to be a "
                                   f"`Dict`, but got {type(data).__name__}")
            data[self.index_name] = i
            yield data

    def __len__(self):
        return len(self.source_datapipe)


def _identity(x):
    return x


@functional_datapipe("flatmap")
class FlatMapperIterDataPipe(IterDataPipe):
    """Each item of ``fn(sample)`` (or of ``fn`` of the ``input_col`` columns); ``fn``
    defaults to the identity, flattening one level."""

    def __init__(self, datapipe, fn=None, input_col=None):
        self.datapipe = datapipe
        self.fn = _identity if fn is None else fn
        _check_unpickable_fn(self.fn)
        self.input_col = input_col

    def __iter__(self):
        for data in self.datapipe:
            yield from _columns_in(self.fn, self.input_col, data)

    def __len__(self):
        raise TypeError(f"{type(self).__name__}'s length relies on the output of its "
                        "function.")


@functional_datapipe("in_batch_shuffle")
class InBatchShufflerIterDataPipe(IterDataPipe):
    """Each batch with its samples shuffled (seeded like Shuffler: ``set_seed`` or one
    draw from ember's global generator per pass)."""

    def __init__(self, datapipe):
        self.datapipe = datapipe
        self._enabled = True
        self._seed = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed):
        self._seed = seed
        return self

    def reset(self):
        if self._enabled:
            self._rng.seed(_draw_seed() if self._seed is None else self._seed)
            self._seed = None

    def __iter__(self):
        for batch in self.datapipe:
            if not self._enabled:
                yield batch
                continue
            new_batch = list(batch)
            self._rng.shuffle(new_batch)
            yield DataChunk(new_batch) if isinstance(batch, DataChunk) else new_batch

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("bucketbatch")
class BucketBatcherIterDataPipe(IterDataPipe):
    """Batches of samples that are alike by ``sort_key``.

    A pool of ``batch_size * batch_num * bucket_num`` samples is shuffled (in-batch
    shuffle of the pool, or a buffer shuffle when ``use_in_batch_shuffle`` is False); each
    bucket of ``batch_size * batch_num`` is sorted by ``sort_key(bucket) -> bucket``; the
    stream is batched; the batches of ``bucket_num`` buckets are shuffled again.
    """

    def __new__(cls, datapipe, batch_size, drop_last=False, batch_num=100, bucket_num=1,
                sort_key=None, use_in_batch_shuffle=True, in_batch_shuffle=None):
        assert batch_size > 0, "Batch size is required to be larger than 0!"
        assert batch_num > 0, "Number of batches is required to be larger than 0!"
        assert bucket_num > 0, "Number of buckets is required to be larger than 0!"
        if in_batch_shuffle is not None:     # the 1.11 (torchdata 0.3) spelling
            use_in_batch_shuffle = in_batch_shuffle
        bucket_size = batch_size * batch_num
        pool_size = bucket_size * bucket_num
        if bucket_num > 1 or sort_key is None:
            if use_in_batch_shuffle:
                datapipe = datapipe.batch(batch_size=pool_size, drop_last=False) \
                    .in_batch_shuffle().unbatch()
            else:
                datapipe = datapipe.shuffle(buffer_size=pool_size)
        if sort_key is not None:
            datapipe = datapipe.batch(bucket_size).map(fn=sort_key).unbatch()
        datapipe = datapipe.batch(batch_size, drop_last=drop_last)
        if sort_key is not None:
            if use_in_batch_shuffle:
                datapipe = datapipe.batch(batch_size=bucket_num, drop_last=False) \
                    .in_batch_shuffle().unbatch()
            else:
                datapipe = datapipe.shuffle(buffer_size=bucket_size)
        return datapipe


class SampleMultiplexerDataPipe(IterDataPipe):
    """Samples drawn from the pipes of ``pipes_to_weights_dict`` with probability
    proportional to their weights; an exhausted pipe drops out and the others' weights are
    renormalised. ``seed`` fixes the draws (``random.Random(seed)``)."""

    def __init__(self, pipes_to_weights_dict, seed=None):
        if not pipes_to_weights_dict:
            raise ValueError("Empty dictionary passed to SampleMultiplexerDataPipe")
        total = 0.0
        for weight in pipes_to_weights_dict.values():
            if weight <= 0:
                raise ValueError(f"Expecting a positive and non-zero weight, got {weight}")
            total += weight
        self.pipes_and_weights = [(pipe, weight / total)
                                  for pipe, weight in pipes_to_weights_dict.items()]
        self.seed = seed
        self.random = random.Random(seed)

    def __iter__(self):
        live = [(iter(pipe), weight) for pipe, weight in self.pipes_and_weights]
        while len(live) > 1:
            r, acc = self.random.random(), 0.0
            for k, (it, weight) in enumerate(live):
                acc += weight
                if r < acc or k == len(live) - 1:
                    try:
                        yield next(it)
                    except StopIteration:
                        rest = 1.0 - weight
                        live = [(i, w / rest) for i, w in live if i is not it]
                    break
        if live:
            yield from live[0][0]

    def reset(self):
        if self.seed is not None:
            self.random = random.Random(self.seed)

    def __len__(self):
        return sum(len(pipe) for pipe, _ in self.pipes_and_weights)
