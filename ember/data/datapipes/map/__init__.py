"""MapDataPipes of torchdata: torch's, plus conversion to an IterDataPipe."""
from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe
from ember.utils.data.datapipes.map import (Batcher, Concater, Mapper, SequenceWrapper,
                                            Shuffler, Zipper)

__all__ = ["Batcher", "Concater", "MapToIterConverter", "Mapper", "SequenceWrapper",
           "Shuffler", "Zipper"]


class MapToIterConverterIterDataPipe(IterDataPipe):
    """``datapipe[i]`` for ``i`` in ``indexer`` (default: ``range(len(datapipe))``)."""

    def __init__(self, datapipe, indexer=None):
        if not isinstance(datapipe, MapDataPipe):
            raise TypeError(f"MapToIterConverter can only apply on MapDataPipe, but found "
                            f"{type(datapipe)}")
        self.datapipe = datapipe
        self.indexer = indexer

    def __iter__(self):
        indices = range(len(self.datapipe)) if self.indexer is None else self.indexer
        for idx in indices:
            yield self.datapipe[idx]

    def __len__(self):
        return len(self.datapipe) if self.indexer is None else len(self.indexer)


MapToIterConverter = MapToIterConverterIterDataPipe
MapDataPipe.register_datapipe_as_function("to_iter_datapipe", MapToIterConverterIterDataPipe)
