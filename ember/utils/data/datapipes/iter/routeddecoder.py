"""RoutedDecoder (``.routed_decode``): decode ``(path, stream)`` by the path's extension."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.utils.decoder import (Decoder, basichandlers,
                                                      extension_extract_fn, imagehandler)

__all__ = ["RoutedDecoderIterDataPipe"]


@functional_datapipe("routed_decode")
class RoutedDecoderIterDataPipe(IterDataPipe):
    """``(path, decoded)`` for each ``(path, stream)``; the default handlers decode text,
    numbers, JSON, pickles, ``.pt`` files and images (as float CHW tensors)."""

    def __init__(self, datapipe, *handlers, key_fn=extension_extract_fn):
        self.datapipe = datapipe
        if not handlers:
            handlers = (basichandlers, imagehandler("torch"))
        self.decoder = Decoder(*handlers, key_fn=key_fn)

    def add_handler(self, *handler):
        self.decoder.add_handler(*handler)

    def __iter__(self):
        for data in self.datapipe:
            pathname = data[0]
            result = self.decoder(data)
            yield (pathname, result[pathname])

    def __len__(self):
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
