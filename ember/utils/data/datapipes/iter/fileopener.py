"""FileOpener (``.open_files``): ``(path, stream)`` for each path."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import declared_length
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.utils.common import get_file_binaries_from_pathnames

__all__ = ["FileOpenerIterDataPipe"]

_MODES = ("b", "t", "rb", "rt", "r")


@functional_datapipe("open_files")
class FileOpenerIterDataPipe(IterDataPipe):
    """Open each path with ``mode`` (one of r, b, t, rb, rt) and ``encoding``; the
    stream comes in a StreamWrapper. ``len`` is ``length`` (``-1``: unknown)."""

    def __init__(self, datapipe, mode="r", encoding=None, length=-1):
        if mode not in _MODES:
            raise ValueError(f"Invalid mode {mode}")
        if encoding is not None and "b" in mode:
            raise ValueError("binary mode doesn't take an encoding argument")
        self.datapipe, self.length = datapipe, length
        self.mode, self.encoding = mode, encoding

    def __iter__(self):
        yield from get_file_binaries_from_pathnames(self.datapipe, self.mode, self.encoding)

    def __len__(self):
        return declared_length(self, self.length)
