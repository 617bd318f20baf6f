"""Datasets: map-style (``__getitem__``) and iterable (``__iter__``), and combinators."""
import bisect
import collections.abc
import itertools
import math
import warnings

import ember

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


class Dataset:
    """A map-style dataset: ``dataset[index]`` is a sample; ``len`` is usually defined."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset, collections.abc.Iterable):
    """A dataset that is a stream of samples. ``__iter__`` is abstract (Iterable's), as in
    torch: a subclass that forgets it cannot be instantiated."""

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is the tuple of row ``i`` of every tensor."""

    def __init__(self, *tensors):
        assert all(t.size(0) == tensors[0].size(0) for t in tensors), \
            "Size mismatch between tensors"
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


def _column(dataset, indices):
    """``[dataset[i] for i in indices]``, through ``__getitems__`` when there is one."""
    getitems = getattr(dataset, "__getitems__", None)
    if not callable(getitems):
        return [dataset[i] for i in indices]
    items = getitems(indices)
    if len(items) != len(indices):
        raise ValueError("Nested dataset's output size mismatch. Expected "
                         f"{len(indices)}, got {len(items)}")
    return items


class StackDataset(Dataset):
    """Zips datasets of one length: samples are tuples (positional datasets) or dicts
    (keyword datasets)."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or"
                             "``dict``- (via ``kwargs``) like input/output, but both types "
                             "are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) or list(kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            cols = {k: _column(d, indices) for k, d in self.datasets.items()}
            return [{k: col[n] for k, col in cols.items()} for n in range(len(indices))]
        cols = [_column(d, indices) for d in self.datasets]
        return [tuple(col[n] for col in cols) for n in range(len(indices))]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for d in self.datasets:
            assert not isinstance(d, IterableDataset), \
                "ConcatDataset does not support IterableDataset"
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        """Find the dataset holding ``idx`` by bisecting the running totals of lengths."""
        total = len(self)
        if idx < -total:
            raise ValueError("absolute value of index should not exceed dataset length")
        idx = idx + total if idx < 0 else idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]

    @property
    def cummulative_sizes(self):
        warnings.warn("cummulative_sizes attribute is renamed to cumulative_sizes",
                      DeprecationWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def _checked(self):
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            yield d

    def __iter__(self):
        for d in self._checked():
            yield from d

    def __len__(self):
        return sum(len(d) for d in self._checked())


class Subset(Dataset):
    """``dataset`` seen through a list of indices."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx):
        """One index, or a list of them (passed on to the dataset as one list)."""
        inner = [self.indices[i] for i in idx] if isinstance(idx, list) else self.indices[idx]
        return self.dataset[inner]

    def __getitems__(self, indices):
        outer = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(outer)
        return [self.dataset[i] for i in outer]

    def __len__(self):
        return len(self.indices)


def _lengths_from_fractions(n, fractions):
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
    lengths = [int(math.floor(n * frac)) for frac in fractions]
    for i in range(n - sum(lengths)):          # hand out the remainder round-robin
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. "
                          f"This might result in an empty dataset.")
    return lengths


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into disjoint random Subsets with the given lengths, or fractions
    that sum to 1."""
    if generator is None:
        generator = ember.random.default_generator
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = ember.randperm(sum(lengths), generator=generator).tolist()
    ends = list(itertools.accumulate(lengths))
    return [Subset(dataset, order[end - length:end]) for end, length in zip(ends, lengths)]
