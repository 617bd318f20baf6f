"""Filter (``.filter``)."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.iter.callable import _columns_in
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn, validate_input_col

__all__ = ["FilterIterDataPipe"]


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """The samples for which ``filter_fn`` (of the sample, or of its ``input_col``
    columns) returns True; any non-bool answer is a ValueError. No length."""

    def __init__(self, datapipe, filter_fn, input_col=None):
        _check_unpickable_fn(filter_fn)
        validate_input_col(filter_fn, input_col)
        self.datapipe, self.filter_fn, self.input_col = datapipe, filter_fn, input_col

    def _keeps(self, sample) -> bool:
        verdict = _columns_in(self.filter_fn, self.input_col, sample)
        if isinstance(verdict, bool):
            return verdict
        raise ValueError("Boolean output is required for `filter_fn` of FilterIterDataPipe, "
                         "got", type(verdict))

    def __iter__(self):
        yield from filter(self._keeps, self.datapipe)
