"""RoutedDecoder (``.routed_decode``): decode ``(path, stream)`` by the path's extension."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import OverOneSource
from ember.utils.data.datapipes.utils.decoder import (Decoder, basichandlers,
                                                      extension_extract_fn, imagehandler)

__all__ = ["RoutedDecoderIterDataPipe"]

_DEFAULT_HANDLERS = (basichandlers, imagehandler("torch"))


@functional_datapipe("routed_decode")
class RoutedDecoderIterDataPipe(OverOneSource):
    """``(path, decoded)`` per ``(path, stream)``. Without ``handlers``: text, numbers,
    JSON, pickles, ``.pt`` files, and images as float CHW tensors."""

    def __init__(self, datapipe, *handlers, key_fn=extension_extract_fn):
        self.datapipe = datapipe
        self.decoder = Decoder(*(handlers or _DEFAULT_HANDLERS), key_fn=key_fn)

    def add_handler(self, *handler):
        self.decoder.add_handler(*handler)

    def __iter__(self):
        for path, payload in self.datapipe:
            yield path, self.decoder((path, payload))[path]
