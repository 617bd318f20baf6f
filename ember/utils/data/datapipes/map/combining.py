"""Concater (``.concat``) and Zipper (``.zip``) over MapDataPipes."""
from collections.abc import Sized

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import MapDataPipe

__all__ = ["ConcaterMapDataPipe", "ZipperMapDataPipe"]


class _OverSeveral(MapDataPipe):
    """Base of the map pipes reading several sized MapDataPipes (``self.datapipes``)."""

    def __init__(self, *datapipes):
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        for required, what in ((MapDataPipe, "`MapDataPipe`"), (Sized, "`Sized`")):
            if any(not isinstance(p, required) for p in datapipes):
                raise TypeError(f"Expected all inputs to be {what}")
        self.datapipes = datapipes


@functional_datapipe("concat")
class ConcaterMapDataPipe(_OverSeveral):
    """Index ``i`` runs through the first pipe, then on into the second, ..."""

    def __getitem__(self, index):
        local = index
        for part in self.datapipes:
            size = len(part)
            if local < size:
                return part[local]
            local -= size
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self):
        return sum(map(len, self.datapipes))


@functional_datapipe("zip")
class ZipperMapDataPipe(_OverSeveral):
    """``dp[i] = (p0[i], p1[i], ...)``; as long as the shortest input."""

    def __getitem__(self, index):
        return tuple(_item_of(part, index) for part in self.datapipes)

    def __len__(self):
        return min(map(len, self.datapipes))


def _item_of(part, index):
    try:
        return part[index]
    except IndexError as e:
        raise IndexError(f"Index {index} is out of range for one of the input "
                         f"MapDataPipes {part}.") from e
