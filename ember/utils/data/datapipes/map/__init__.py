"""The built-in MapDataPipes under their short names (``Mapper``, ``Batcher``, ...)."""
from ember.utils.data.datapipes.map.callable import MapperMapDataPipe as Mapper
from ember.utils.data.datapipes.map.combinatorics import ShufflerIterDataPipe as Shuffler
from ember.utils.data.datapipes.map.combining import ConcaterMapDataPipe as Concater
from ember.utils.data.datapipes.map.combining import ZipperMapDataPipe as Zipper
from ember.utils.data.datapipes.map.grouping import BatcherMapDataPipe as Batcher
from ember.utils.data.datapipes.map.utils import SequenceWrapperMapDataPipe as SequenceWrapper

__all__ = sorted(name for name in dir() if name[0].isupper())
