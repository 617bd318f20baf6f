"""ember.utils.data.datapipes (torch.utils.data.datapipes): composable data pipes."""
from ember.utils.data.datapipes import iter, map, utils  # noqa: A004
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import DataChunk, IterDataPipe, MapDataPipe

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe", "iter", "map",
           "utils"]
