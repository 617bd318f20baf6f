"""The built-in IterDataPipes under their short names (``Mapper``, ``Shuffler``, ...)."""
from ember.utils.data.datapipes.iter.callable import CollatorIterDataPipe as Collator
from ember.utils.data.datapipes.iter.callable import MapperIterDataPipe as Mapper
from ember.utils.data.datapipes.iter.combinatorics import SamplerIterDataPipe as Sampler
from ember.utils.data.datapipes.iter.combinatorics import ShufflerIterDataPipe as Shuffler
from ember.utils.data.datapipes.iter.combining import ConcaterIterDataPipe as Concater
from ember.utils.data.datapipes.iter.combining import DemultiplexerIterDataPipe as Demultiplexer
from ember.utils.data.datapipes.iter.combining import ForkerIterDataPipe as Forker
from ember.utils.data.datapipes.iter.combining import MultiplexerIterDataPipe as Multiplexer
from ember.utils.data.datapipes.iter.combining import ZipperIterDataPipe as Zipper
from ember.utils.data.datapipes.iter.filelister import FileListerIterDataPipe as FileLister
from ember.utils.data.datapipes.iter.fileopener import FileOpenerIterDataPipe as FileOpener
from ember.utils.data.datapipes.iter.grouping import BatcherIterDataPipe as Batcher
from ember.utils.data.datapipes.iter.grouping import GrouperIterDataPipe as Grouper
from ember.utils.data.datapipes.iter.grouping import UnBatcherIterDataPipe as UnBatcher
from ember.utils.data.datapipes.iter.routeddecoder import (
    RoutedDecoderIterDataPipe as RoutedDecoder)
from ember.utils.data.datapipes.iter.selecting import FilterIterDataPipe as Filter
from ember.utils.data.datapipes.iter.sharding import ShardingFilterIterDataPipe as ShardingFilter
from ember.utils.data.datapipes.iter.streamreader import StreamReaderIterDataPipe as StreamReader
from ember.utils.data.datapipes.iter.utils import IterableWrapperIterDataPipe as IterableWrapper

__all__ = sorted(name for name in dir() if name[0].isupper())
