"""ember.data.datapipes (torchdata.datapipes): torch's pipes plus TorchData's."""
from ember.data.datapipes import iter, map  # noqa: A004
from ember.utils.data.datapipes import utils
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import DataChunk, IterDataPipe, MapDataPipe

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe", "iter", "map",
           "utils"]
