"""Mapper (``.map``) and Collator (``.collate``)."""
from ember.utils.data._utils.collate import default_collate
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn, validate_input_col

__all__ = ["CollatorIterDataPipe", "MapperIterDataPipe"]


def _columns_in(fn, input_col, data):
    """``fn`` applied to the whole sample, one column, or several columns."""
    if input_col is None:
        return fn(data)
    if isinstance(input_col, (list, tuple)):
        return fn(*(data[col] for col in input_col))
    return fn(data[input_col])


def _apply_fn(fn, input_col, output_col, data):
    """Mapper's rule: the result replaces ``input_col`` (the first of several, the others
    removed), or goes to ``output_col`` (``-1``: appended). Tuples come back as tuples."""
    if input_col is None and output_col is None:
        return fn(data)
    res = _columns_in(fn, input_col, data)
    was_tuple = isinstance(data, tuple)
    if was_tuple:
        data = list(data)
    if output_col is None:
        if isinstance(input_col, (list, tuple)):
            data[input_col[0]] = res
            for idx in sorted(input_col[1:], reverse=True):
                del data[idx]
        else:
            data[input_col] = res
    elif output_col == -1:
        data.append(res)
    else:
        data[output_col] = res
    return tuple(data) if was_tuple else data


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """Apply ``fn`` to each sample (or to its ``input_col`` columns, see ``_apply_fn``)."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        self.datapipe = datapipe
        _check_unpickable_fn(fn)
        self.fn = fn
        self.input_col = input_col
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) > 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        self.output_col = output_col
        validate_input_col(fn, input_col)

    def _apply_fn(self, data):
        return _apply_fn(self.fn, self.input_col, self.output_col, data)

    def __iter__(self):
        for data in self.datapipe:
            yield self._apply_fn(data)

    def __len__(self):
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


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
