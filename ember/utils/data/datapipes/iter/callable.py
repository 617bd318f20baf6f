"""Mapper (``.map``) and Collator (``.collate``)."""
from ember.utils.data._utils.collate import default_collate
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import OverOneSource
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn, validate_input_col

__all__ = ["CollatorIterDataPipe", "MapperIterDataPipe"]


def _columns_in(fn, input_col, data):
    """``fn(data)``, ``fn(data[input_col])`` or ``fn(*[data[c] for c in input_col])``."""
    if input_col is None:
        return fn(data)
    several = isinstance(input_col, (list, tuple))
    return fn(*[data[c] for c in input_col]) if several else fn(data[input_col])


def _apply_fn(fn, input_col, output_col, data):
    """Mapper's rule: the result replaces ``input_col`` (the first of several, the others
    deleted) or goes to ``output_col`` (``-1``: appended). Tuples come back as tuples."""
    if input_col is None:
        return fn(data)
    value = _columns_in(fn, input_col, data)
    row = list(data) if isinstance(data, tuple) else data
    if output_col == -1:
        row.append(value)
    elif output_col is not None:
        row[output_col] = value
    elif isinstance(input_col, (list, tuple)):
        row[input_col[0]] = value
        for extra in sorted(input_col[1:], reverse=True):
            del row[extra]
    else:
        row[input_col] = value
    return tuple(row) if isinstance(data, tuple) else row


def _one_output_col(input_col, output_col):
    """Check ``output_col`` against ``input_col``; a one-element list/tuple -> its item."""
    if output_col is not None and input_col is None:
        raise ValueError("`output_col` must be None when `input_col` is None.")
    if not isinstance(output_col, (list, tuple)):
        return output_col
    if len(output_col) > 1:
        raise ValueError("`output_col` must be a single-element list or tuple")
    return output_col[0]


@functional_datapipe("map")
class MapperIterDataPipe(OverOneSource):
    """``fn`` of each sample, or of its ``input_col`` columns with the result written back
    (see ``_apply_fn``)."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        _check_unpickable_fn(fn)
        self.datapipe, self.fn = datapipe, fn
        self.output_col = _one_output_col(input_col, output_col)
        self.input_col = input_col
        validate_input_col(fn, input_col)

    def __iter__(self):
        fn, cols = self.fn, (self.input_col, self.output_col)
        for sample in self.datapipe:
            yield _apply_fn(fn, *cols, sample)


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Collate each batch with ``collate_fn`` or ``conversion`` (default_collate)."""

    def __init__(self, datapipe, conversion=default_collate, collate_fn=None):
        if collate_fn is not None:
            super().__init__(datapipe, fn=collate_fn)
        elif callable(conversion):
            super().__init__(datapipe, fn=conversion)
        else:
            raise NotImplementedError("Collator in ember takes a callable conversion; "
                                      "per-column dict conversions (DataFrames) are not "
                                      "supported")
