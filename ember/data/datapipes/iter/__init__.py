"""IterDataPipes of torchdata: torch's built-ins plus the 1.11 release's TorchData pipes."""
from ember.data.datapipes.iter.archives import (
    DecompressorIterDataPipe as Decompressor,
    TarArchiveLoaderIterDataPipe as TarArchiveLoader,
    ZipArchiveLoaderIterDataPipe as ZipArchiveLoader)
from ember.data.datapipes.iter.cache import (
    EndOnDiskCacheHolderIterDataPipe as EndOnDiskCacheHolder,
    InMemoryCacheHolderIterDataPipe as InMemoryCacheHolder,
    OnDiskCacheHolderIterDataPipe as OnDiskCacheHolder)
from ember.data.datapipes.iter.io import (HTTPReaderIterDataPipe as HttpReader,
                                          SaverIterDataPipe as Saver)
from ember.data.datapipes.iter.text import (
    CSVDictParserIterDataPipe as CSVDictParser, CSVParserIterDataPipe as CSVParser,
    JsonParserIterDataPipe as JsonParser, LineReaderIterDataPipe as LineReader,
    ParagraphAggregatorIterDataPipe as ParagraphAggregator,
    Rows2ColumnarIterDataPipe as Rows2Columnar)
from ember.data.datapipes.iter.transforms import (
    BucketBatcherIterDataPipe as BucketBatcher, CyclerIterDataPipe as Cycler,
    EnumeratorIterDataPipe as Enumerator, FlatMapperIterDataPipe as FlatMapper,
    HeaderIterDataPipe as Header, IndexAdderIterDataPipe as IndexAdder,
    InBatchShufflerIterDataPipe as InBatchShuffler,
    SampleMultiplexerDataPipe as SampleMultiplexer)
from ember.utils.data.datapipes.iter import (Batcher, Collator, Concater, Demultiplexer,
                                             FileLister, FileOpener, Filter, Forker, Grouper,
                                             IterableWrapper, Mapper, Multiplexer,
                                             RoutedDecoder, Sampler, ShardingFilter, Shuffler,
                                             StreamReader, UnBatcher, Zipper)

FileLoader = FileOpener

__all__ = ["Batcher", "BucketBatcher", "CSVDictParser", "CSVParser", "Collator", "Concater",
           "Cycler", "Decompressor", "Demultiplexer", "EndOnDiskCacheHolder", "Enumerator",
           "FileLister", "FileLoader", "FileOpener", "Filter", "FlatMapper", "Forker",
           "Grouper", "Header", "HttpReader", "InBatchShuffler", "InMemoryCacheHolder",
           "IndexAdder", "IterableWrapper", "JsonParser", "LineReader", "Mapper",
           "Multiplexer", "OnDiskCacheHolder", "ParagraphAggregator", "RoutedDecoder",
           "Rows2Columnar", "SampleMultiplexer", "Sampler", "Saver", "ShardingFilter",
           "Shuffler", "StreamReader", "TarArchiveLoader", "UnBatcher", "ZipArchiveLoader",
           "Zipper"]
