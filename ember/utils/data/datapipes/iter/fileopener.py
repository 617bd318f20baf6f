"""FileOpener (``.open_files``): ``(path, stream)`` for each path."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.utils.common import get_file_binaries_from_pathnames

__all__ = ["FileOpenerIterDataPipe"]


@functional_datapipe("open_files")
class FileOpenerIterDataPipe(IterDataPipe):
    """Open each path with ``mode`` (``r``, ``b``, ``t``, ``rb`` or ``rt``); the stream
    comes wrapped in a StreamWrapper."""

    def __init__(self, datapipe, mode="r", encoding=None, length=-1):
        self.datapipe = datapipe
        self.mode = mode
        self.encoding = encoding
        if self.mode not in ("b", "t", "rb", "rt", "r"):
            raise ValueError(f"Invalid mode {mode}")
        if "b" in mode and encoding is not None:
            raise ValueError("binary mode doesn't take an encoding argument")
        self.length = length

    def __iter__(self):
        yield from get_file_binaries_from_pathnames(self.datapipe, self.mode, self.encoding)

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length
