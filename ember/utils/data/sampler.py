"""Samplers: iterables over dataset indices (or over batches of indices)."""
import itertools
import warnings

import ember

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]


def _draw_seed(generator=None):
    """One random int64 drawn from ``generator`` (the default generator if None)."""
    return int(ember.empty((), dtype=ember.int64).random_(generator=generator).item())


class Sampler:
    """Base class of samplers: subclasses define ``__iter__`` (and usually ``__len__``)."""

    def __init__(self, data_source=None):
        if data_source is not None:
            warnings.warn("`data_source` argument is not used and will be removed in 2.2.0."
                          "You may still have custom implementation that utilizes it.")

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Shuffled indices (whole permutations, then a partial one), or indices drawn with
    replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        vars(self).update(data_source=data_source, replacement=replacement,
                          _num_samples=num_samples, generator=generator)
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, total = len(self.data_source), self.num_samples
        gen = self.generator
        if gen is None:     # a private generator, seeded from the default one
            gen = ember.Generator()
            gen.manual_seed(_draw_seed())
        if self.replacement:
            # drawn lazily 32 at a time, then the remainder (torch's stream)
            for _ in range(total // 32):
                yield from self._draw(n, 32, gen)
            yield from self._draw(n, total % 32, gen)
        else:
            for _ in range(total // n):
                yield from ember.randperm(n, generator=gen).tolist()
            yield from ember.randperm(n, generator=gen).tolist()[:total % n]

    @staticmethod
    def _draw(n, size, gen):
        return ember.randint(high=n, size=(size,), dtype=ember.int64, generator=gen).tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, shuffled."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        order = ember.randperm(len(self.indices), generator=self.generator)
        yield from (self.indices[k] for k in order.tolist())   # drawn on the first next()

    def __len__(self):
        return len(self.indices)


def _is_positive_int(x):
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices into ``weights``, drawn with probability proportional to
    the weight."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = ember.as_tensor(weights, dtype=ember.double)
        if w.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        vars(self).update(weights=w, num_samples=num_samples, replacement=replacement,
                          generator=generator)

    def __iter__(self):
        picks = ember.multinomial(self.weights, num_samples=self.num_samples,
                                  replacement=self.replacement, generator=self.generator)
        yield from picks.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` consecutive indices from ``sampler``; a shorter last list
    unless ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
