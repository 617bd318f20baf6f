"""Batcher (``.batch``) over a MapDataPipe."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import DataChunk, MapDataPipe

__all__ = ["BatcherMapDataPipe"]


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    """``dp[i]`` is samples ``i*batch_size ... (i+1)*batch_size - 1`` as a list (the last
    one short unless ``drop_last``)."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        assert batch_size > 0, "Batch size is required to be larger than 0!"
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index):
        batch = []
        indices = range(index * self.batch_size, (index + 1) * self.batch_size)
        try:
            for i in indices:
                batch.append(self.datapipe[i])
            return self.wrapper_class(batch)
        except IndexError as e:
            if not self.drop_last and len(batch) > 0:
                return self.wrapper_class(batch)
            raise IndexError(f"Index {index} is out of bound.") from e

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
