"""The built-in MapDataPipes, by torch's names."""
from ember.utils.data.datapipes.map.callable import MapperMapDataPipe as Mapper
from ember.utils.data.datapipes.map.combinatorics import ShufflerIterDataPipe as Shuffler
from ember.utils.data.datapipes.map.combining import (ConcaterMapDataPipe as Concater,
                                                      ZipperMapDataPipe as Zipper)
from ember.utils.data.datapipes.map.grouping import BatcherMapDataPipe as Batcher
from ember.utils.data.datapipes.map.utils import SequenceWrapperMapDataPipe as SequenceWrapper

__all__ = ["Batcher", "Concater", "Mapper", "SequenceWrapper", "Shuffler", "Zipper"]
