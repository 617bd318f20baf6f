"""IterableWrapper: any iterable as an IterDataPipe."""
import copy
import warnings

from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["IterableWrapperIterDataPipe"]


class IterableWrapperIterDataPipe(IterDataPipe):
    """Yield the items of ``iterable`` (a deep copy of it per pass when ``deepcopy``)."""

    def __init__(self, iterable, deepcopy=True):
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn("The input iterable can not be deepcopied, please be aware of "
                              "in-place modification would affect source data.")
        yield from source

    def __len__(self):
        try:
            return len(self.iterable)
        except TypeError:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length") \
                from None
