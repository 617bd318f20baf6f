"""FileLister (``.list_files``): file paths under one or more roots."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes._shared import declared_length
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.iter.utils import IterableWrapperIterDataPipe
from ember.utils.data.datapipes.utils.common import get_file_pathnames_from_root

__all__ = ["FileListerIterDataPipe"]


def _as_pipe(root):
    """A root path, a list of them, or a pipe of them -> a pipe of root paths."""
    if isinstance(root, IterDataPipe):
        return root
    return IterableWrapperIterDataPipe([root] if isinstance(root, str) else root)


@functional_datapipe("list_files")
class FileListerIterDataPipe(IterDataPipe):
    """Paths of the files under each root that match ``masks`` (sorted per folder unless
    ``non_deterministic``; sub-folders with ``recursive``). ``len`` is ``length``
    (``-1``: unknown)."""

    def __init__(self, root=".", masks="", *, recursive=False, abspath=False,
                 non_deterministic=False, length=-1):
        self.datapipe = _as_pipe(root)
        self.masks, self.length = masks, length
        self.recursive, self.abspath = recursive, abspath
        self.non_deterministic = non_deterministic

    def __iter__(self):
        options = (self.masks, self.recursive, self.abspath, self.non_deterministic)
        for top in self.datapipe:
            yield from get_file_pathnames_from_root(top, *options)

    def __len__(self):
        return declared_length(self, self.length)
