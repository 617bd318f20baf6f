"""Archive and compression pipes: TarArchiveLoader, ZipArchiveLoader, Decompressor.

Each takes ``(path, stream)`` and yields ``(inner path, StreamWrapper)``; the inner path
of a member is ``os.path.join(path, member name)``, normalised.
"""
import bz2
import gzip
import lzma
import os
import tarfile
import warnings
import zipfile
from enum import Enum

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.utils.common import StreamWrapper

__all__ = ["CompressionType", "DecompressorIterDataPipe", "TarArchiveLoaderIterDataPipe",
           "ZipArchiveLoaderIterDataPipe"]


def _no_len(dp):
    return TypeError(f"{type(dp).__name__} instance doesn't have valid length")


@functional_datapipe("load_from_tar")
class TarArchiveLoaderIterDataPipe(IterDataPipe):
    """The regular files of each tar archive (``mode`` as ``tarfile.open``'s)."""

    def __init__(self, datapipe, mode="r:*", length=-1):
        self.datapipe = datapipe
        self.mode = mode
        self.length = length

    def __iter__(self):
        for pathname, data_stream in self.datapipe:
            try:
                fileobj = data_stream.file_obj if isinstance(data_stream, StreamWrapper) \
                    else data_stream
                tar = tarfile.open(fileobj=fileobj, mode=self.mode)
                for tarinfo in tar:
                    if not tarinfo.isfile():
                        continue
                    extracted = tar.extractfile(tarinfo)
                    if extracted is None:
                        warnings.warn(f"failed to extract file {tarinfo.name} from source "
                                      "tarfile {pathname}")
                        raise tarfile.ExtractError
                    inner = os.path.normpath(os.path.join(pathname, tarinfo.name))
                    yield inner, StreamWrapper(extracted, _parent(data_stream), name=inner)
            except Exception as e:
                warnings.warn(f"Unable to extract files from corrupted tarfile stream "
                              f"{pathname} due to: {e}, abort!")
                raise

    def __len__(self):
        if self.length == -1:
            raise _no_len(self)
        return self.length


def _parent(stream):
    return stream if isinstance(stream, StreamWrapper) else None


@functional_datapipe("load_from_zip")
class ZipArchiveLoaderIterDataPipe(IterDataPipe):
    """The files (not folders) of each zip archive."""

    def __init__(self, datapipe, length=-1):
        self.datapipe = datapipe
        self.length = length

    def __iter__(self):
        for pathname, data_stream in self.datapipe:
            try:
                fileobj = data_stream.file_obj if isinstance(data_stream, StreamWrapper) \
                    else data_stream
                zips = zipfile.ZipFile(fileobj)
                for zipinfo in zips.infolist():
                    if zipinfo.is_dir():
                        continue
                    inner = os.path.normpath(os.path.join(pathname, zipinfo.filename))
                    yield inner, StreamWrapper(zips.open(zipinfo), _parent(data_stream),
                                               name=inner)
            except Exception as e:
                warnings.warn(f"Unable to extract files from corrupted zipfile stream "
                              f"{pathname} due to: {e}, abort!")
                raise

    def __len__(self):
        if self.length == -1:
            raise _no_len(self)
        return self.length


class CompressionType(Enum):
    GZIP = "gzip"
    LZMA = "lzma"
    TAR = "tar"
    ZIP = "zip"
    BZIP2 = "bz2"


_SUFFIXES = {".gz": CompressionType.GZIP, ".xz": CompressionType.LZMA,
             ".tar": CompressionType.TAR, ".zip": CompressionType.ZIP,
             ".bz2": CompressionType.BZIP2}


_ALIASES = {"gz": "gzip", "xz": "lzma", "bzip2": "bz2"}


def _first_tar_member(fileobj):
    tar = tarfile.open(fileobj=fileobj, mode="r:*")
    member = next((m for m in tar if m.isfile()), None)
    if member is None:
        raise RuntimeError("Decompressor: the tar archive holds no file")
    return tar.extractfile(member)


def _first_zip_member(fileobj):
    zips = zipfile.ZipFile(fileobj)
    member = next((m for m in zips.infolist() if not m.is_dir()), None)
    if member is None:
        raise RuntimeError("Decompressor: the zip archive holds no file")
    return zips.open(member)


@functional_datapipe("decompress")
class DecompressorIterDataPipe(IterDataPipe):
    """``(path without the suffix, decompressed stream)``; the type comes from
    ``file_type`` (``"gzip"``, ``"lzma"``, ``"bz2"``, ``"tar"``, ``"zip"``) or from each
    path's suffix (.gz, .xz, .bz2, .tar, .zip). A tar or zip archive gives the stream of
    its first file (``load_from_tar``/``load_from_zip`` give every file)."""
    types = CompressionType

    _DECOMPRESSORS = {
        CompressionType.GZIP: lambda f: gzip.GzipFile(fileobj=f),
        CompressionType.LZMA: lambda f: lzma.LZMAFile(f),
        CompressionType.BZIP2: lambda f: bz2.BZ2File(f),
        CompressionType.TAR: lambda f: _first_tar_member(f),
        CompressionType.ZIP: lambda f: _first_zip_member(f),
    }

    def __init__(self, source_datapipe, file_type=None):
        self.source_datapipe = source_datapipe
        if isinstance(file_type, str):
            try:
                file_type = CompressionType(_ALIASES.get(file_type.lower(), file_type.lower()))
            except ValueError:
                raise ValueError(f"Unknown compression type {file_type!r}; expected one of "
                                 f"{[t.value for t in CompressionType]}") from None
        self.file_type = file_type

    def _detect(self, path):
        if self.file_type is not None:
            return self.file_type
        suffix = os.path.splitext(path)[1].lower()
        if suffix not in _SUFFIXES:
            raise RuntimeError(f"Unable to detect the compression type of {path}: its "
                               "suffix is none of .gz, .xz, .bz2, .tar, .zip; pass "
                               "file_type")
        return _SUFFIXES[suffix]

    def __iter__(self):
        for path, stream in self.source_datapipe:
            kind = self._detect(path)
            fileobj = stream.file_obj if isinstance(stream, StreamWrapper) else stream
            new_path = os.path.splitext(path)[0] if os.path.splitext(path)[1].lower() in \
                _SUFFIXES else path
            yield new_path, StreamWrapper(self._DECOMPRESSORS[kind](fileobj), _parent(stream))

    def __len__(self):
        return len(self.source_datapipe)
