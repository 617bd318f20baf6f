"""StreamReader (``.read_from_stream``): ``(path, chunk)`` pieces of each stream."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["StreamReaderIterDataPipe"]


def _pieces(stream, size):
    """``stream.read(size)`` until it comes back empty; the stream is then closed."""
    piece = stream.read(size)
    while piece:
        yield piece
        piece = stream.read(size)
    stream.close()


@functional_datapipe("read_from_stream")
class StreamReaderIterDataPipe(IterDataPipe):
    """``(path, bytes)`` pieces of each ``(path, stream)``, ``chunk`` bytes at a time (None:
    the whole stream at once); each stream is closed once read out."""

    def __init__(self, datapipe, chunk=None):
        self.datapipe, self.chunk = datapipe, chunk

    def __iter__(self):
        for path, stream in self.datapipe:
            yield from ((path, piece) for piece in _pieces(stream, self.chunk))
