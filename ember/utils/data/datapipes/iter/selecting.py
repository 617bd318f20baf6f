"""Filter (``.filter``)."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.iter.callable import _columns_in
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn, validate_input_col

__all__ = ["FilterIterDataPipe"]


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """Keep the samples for which ``filter_fn`` (of the sample or its ``input_col``) is True."""

    def __init__(self, datapipe, filter_fn, input_col=None):
        self.datapipe = datapipe
        _check_unpickable_fn(filter_fn)
        self.filter_fn = filter_fn
        self.input_col = input_col
        validate_input_col(filter_fn, input_col)

    def _returnIfTrue(self, data):
        condition = _columns_in(self.filter_fn, self.input_col, data)
        if not isinstance(condition, bool):
            raise ValueError("Boolean output is required for `filter_fn` of "
                             "FilterIterDataPipe, got", type(condition))
        return condition, data

    def __iter__(self):
        for data in self.datapipe:
            keep, data = self._returnIfTrue(data)
            if keep:
                yield data
