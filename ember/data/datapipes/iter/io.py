"""Saver (``.save_to_disk``) and HttpReader (``.read_from_http``)."""
import os
import urllib.error
import urllib.request

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.utils.common import StreamWrapper

__all__ = ["HTTPReaderIterDataPipe", "SaverIterDataPipe"]


@functional_datapipe("save_to_disk")
class SaverIterDataPipe(IterDataPipe):
    """Write each ``(metadata, data)`` to ``filepath_fn(metadata)`` (default: the
    metadata) with ``mode``, creating folders; yields the path."""

    def __init__(self, source_datapipe, mode="w", filepath_fn=None):
        self.source_datapipe = source_datapipe
        self.mode = mode if "w" in mode else "w" + mode
        self.fn = filepath_fn

    def __iter__(self):
        for meta, data in self.source_datapipe:
            filepath = meta if self.fn is None else self.fn(meta)
            dirname = os.path.dirname(filepath)
            if dirname and not os.path.exists(dirname):
                os.makedirs(dirname)
            with open(filepath, self.mode) as f:
                f.write(data)
            yield filepath

    def __len__(self):
        return len(self.source_datapipe)


@functional_datapipe("read_from_http")
class HTTPReaderIterDataPipe(IterDataPipe):
    """``(url, StreamWrapper(response))`` for each URL, through urllib (``timeout`` in
    seconds). A URL that cannot be fetched (offline, refused, HTTP error) raises
    ConnectionError naming it."""

    def __init__(self, source_datapipe, timeout=None, **kwargs):
        self.source_datapipe = source_datapipe
        self.timeout = timeout
        self.query_params = kwargs.pop("query_params", {})
        self.headers = kwargs.pop("headers", {})
        if kwargs:
            raise NotImplementedError(f"HttpReader in ember takes timeout, headers and "
                                      f"query_params; got {sorted(kwargs)}")

    def _open(self, url):
        if self.query_params:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(self.query_params)
        request = urllib.request.Request(url, headers=self.headers)
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raise ConnectionError(f"Could not get the file at {url}. [HTTP Error] {e.code} "
                                  f"{e.reason}.") from e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ConnectionError(f"Could not get the file at {url}. [Connection Error] "
                                  f"{reason}. Is this machine offline?") from e

    def __iter__(self):
        for url in self.source_datapipe:
            yield url, StreamWrapper(self._open(url))

    def __len__(self):
        return len(self.source_datapipe)
