"""Batcher (``.batch``) over a MapDataPipe."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import batch_count
from ember.utils.data.datapipes.datapipe import DataChunk, MapDataPipe

__all__ = ["BatcherMapDataPipe"]


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    """``dp[i]`` wraps samples ``[i * batch_size, (i + 1) * batch_size)`` in
    ``wrapper_class``; the last batch is short unless ``drop_last``."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        assert batch_size > 0, "Batch size is required to be larger than 0!"
        self.datapipe, self.wrapper_class = datapipe, wrapper_class
        self.batch_size, self.drop_last = batch_size, drop_last

    def __getitem__(self, index):
        first = index * self.batch_size
        members = []
        for position in range(first, first + self.batch_size):
            try:
                members.append(self.datapipe[position])
            except IndexError as e:
                if members and not self.drop_last:
                    break
                raise IndexError(f"Index {index} is out of bound.") from e
        return self.wrapper_class(members)

    def __len__(self):
        return batch_count(len(self.datapipe), self.batch_size, self.drop_last)
