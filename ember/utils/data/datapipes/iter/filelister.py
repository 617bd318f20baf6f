"""FileLister (``.list_files``): file paths under one or more roots."""
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.datapipes.iter.utils import IterableWrapperIterDataPipe
from ember.utils.data.datapipes.utils.common import get_file_pathnames_from_root

__all__ = ["FileListerIterDataPipe"]


@functional_datapipe("list_files")
class FileListerIterDataPipe(IterDataPipe):
    """Paths of the files under each root matching ``masks`` (sorted per folder unless
    ``non_deterministic``); ``length`` is what ``len`` reports (``-1``: no length)."""

    def __init__(self, root=".", masks="", *, recursive=False, abspath=False,
                 non_deterministic=False, length=-1):
        if isinstance(root, str):
            root = [root]
        if not isinstance(root, IterDataPipe):
            root = IterableWrapperIterDataPipe(root)
        self.datapipe = root
        self.masks = masks
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic
        self.length = length

    def __iter__(self):
        for path in self.datapipe:
            yield from get_file_pathnames_from_root(path, self.masks, self.recursive,
                                                    self.abspath, self.non_deterministic)

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length
