"""Concater (``.concat``) and Zipper (``.zip``) over MapDataPipes."""
from collections.abc import Sized

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import MapDataPipe

__all__ = ["ConcaterMapDataPipe", "ZipperMapDataPipe"]


def _check_inputs(datapipes):
    if len(datapipes) == 0:
        raise ValueError("Expected at least one DataPipe, but got nothing")
    if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
        raise TypeError("Expected all inputs to be `MapDataPipe`")
    if not all(isinstance(dp, Sized) for dp in datapipes):
        raise TypeError("Expected all inputs to be `Sized`")


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """Indices run through the first pipe, then the second, ..."""

    def __init__(self, *datapipes):
        _check_inputs(datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index):
        offset = 0
        for dp in self.datapipes:
            if index - offset < len(dp):
                return dp[index - offset]
            offset += len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """``dp[i]`` is the tuple of ``p[i]`` over the inputs; as long as the shortest."""

    def __init__(self, *datapipes):
        _check_inputs(datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index):
        res = []
        for dp in self.datapipes:
            try:
                res.append(dp[index])
            except IndexError as e:
                raise IndexError(f"Index {index} is out of range for one of the input "
                                 f"MapDataPipes {dp}.") from e
        return tuple(res)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)
