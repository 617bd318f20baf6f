"""SequenceWrapper: any sequence as a MapDataPipe."""
import copy
import warnings

from ember.utils.data.datapipes.datapipe import MapDataPipe

__all__ = ["SequenceWrapperMapDataPipe"]


class SequenceWrapperMapDataPipe(MapDataPipe):
    """``dp[i]`` is ``sequence[i]`` (of a deep copy when ``deepcopy``)."""

    def __init__(self, sequence, deepcopy=True):
        if deepcopy:
            try:
                self.sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn("The input sequence can not be deepcopied, please be aware of "
                              "in-place modification would affect source data")
                self.sequence = sequence
        else:
            self.sequence = sequence

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)
