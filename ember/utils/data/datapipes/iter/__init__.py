"""The built-in IterDataPipes, by torch's names."""
from ember.utils.data.datapipes.iter.callable import (CollatorIterDataPipe as Collator,
                                                      MapperIterDataPipe as Mapper)
from ember.utils.data.datapipes.iter.combinatorics import (SamplerIterDataPipe as Sampler,
                                                           ShufflerIterDataPipe as Shuffler)
from ember.utils.data.datapipes.iter.combining import (
    ConcaterIterDataPipe as Concater, DemultiplexerIterDataPipe as Demultiplexer,
    ForkerIterDataPipe as Forker, MultiplexerIterDataPipe as Multiplexer,
    ZipperIterDataPipe as Zipper)
from ember.utils.data.datapipes.iter.filelister import FileListerIterDataPipe as FileLister
from ember.utils.data.datapipes.iter.fileopener import FileOpenerIterDataPipe as FileOpener
from ember.utils.data.datapipes.iter.grouping import (BatcherIterDataPipe as Batcher,
                                                      GrouperIterDataPipe as Grouper,
                                                      UnBatcherIterDataPipe as UnBatcher)
from ember.utils.data.datapipes.iter.routeddecoder import (
    RoutedDecoderIterDataPipe as RoutedDecoder)
from ember.utils.data.datapipes.iter.selecting import FilterIterDataPipe as Filter
from ember.utils.data.datapipes.iter.sharding import (
    ShardingFilterIterDataPipe as ShardingFilter)
from ember.utils.data.datapipes.iter.streamreader import (
    StreamReaderIterDataPipe as StreamReader)
from ember.utils.data.datapipes.iter.utils import IterableWrapperIterDataPipe as IterableWrapper

__all__ = ["Batcher", "Collator", "Concater", "Demultiplexer", "FileLister", "FileOpener",
           "Filter", "Forker", "Grouper", "IterableWrapper", "Mapper", "Multiplexer",
           "RoutedDecoder", "Sampler", "ShardingFilter", "Shuffler", "StreamReader",
           "UnBatcher", "Zipper"]
