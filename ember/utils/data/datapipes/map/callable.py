"""Mapper (``.map``) over a MapDataPipe."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import MapDataPipe
from ember.utils.data.datapipes.utils.common import _check_unpickable_fn

__all__ = ["MapperMapDataPipe"]


def default_fn(data):
    """The identity: Mapper's ``fn`` when none is given."""
    return data


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """``dp[i] = fn(datapipe[i])``; as long as ``datapipe``."""

    def __init__(self, datapipe, fn=default_fn):
        _check_unpickable_fn(fn)
        self.datapipe, self.fn = datapipe, fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)
