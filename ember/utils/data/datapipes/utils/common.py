"""Helpers the pipes share: argument checks, file listing/opening, StreamWrapper."""
import fnmatch
import functools
import inspect
import os
import warnings

__all__ = ["StreamWrapper", "get_file_binaries_from_pathnames",
           "get_file_pathnames_from_root", "match_masks", "validate_input_col"]


def _check_unpickable_fn(fn):
    """Reject non-callables; warn (as torch) when ``fn`` cannot be pickled by name."""
    if not callable(fn):
        raise TypeError(f"A callable function is expected, but {type(fn)} is provided.")
    while isinstance(fn, functools.partial):
        fn = fn.func
    if "<locals>" in getattr(fn, "__qualname__", ""):
        warnings.warn("Local function is not supported by pickle, please use regular python "
                      "function or functools.partial instead.")
    elif getattr(fn, "__name__", "") == "<lambda>":
        warnings.warn("Lambda function is not supported by pickle, please use regular python "
                      "function or functools.partial instead.")


def validate_input_col(fn, input_col):
    """Check that ``fn`` takes as many positional arguments as ``input_col`` names."""
    size = len(input_col) if isinstance(input_col, (list, tuple)) else 1
    try:
        params = inspect.signature(fn).parameters.values()
    except ValueError:        # builtins without a signature: nothing to check
        return
    name = getattr(fn, "__name__", repr(fn))
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        if size < len(required):
            raise ValueError(f"The function {name} takes {len(required)} positional "
                             f"parameters, but {size} are required.")
        return
    if size > len(positional):
        raise ValueError(f"The function {name} takes {len(positional)} parameters, but "
                         f"{size} are required.")
    if size < len(required):
        raise ValueError(f"The function {name} takes {len(required)} positional parameters, "
                         f"but {size} are required.")


def match_masks(name: str, masks) -> bool:
    """Whether file ``name`` matches one of the glob ``masks`` (empty: everything)."""
    if not masks:
        return True
    if isinstance(masks, str):
        return fnmatch.fnmatch(name, masks)
    return any(fnmatch.fnmatch(name, mask) for mask in masks)


def get_file_pathnames_from_root(root, masks, recursive=False, abspath=False,
                                 non_deterministic=False):
    """Paths under ``root`` matching ``masks``: sorted per folder, sub-folders when
    ``recursive``; ``root`` itself when it is a matching file."""
    def onerror(err):
        warnings.warn(f"{err.filename} : {err.strerror}")
        raise err

    if os.path.isfile(root):
        path = os.path.abspath(root) if abspath else root
        if match_masks(os.path.basename(path), masks):
            yield path
        return
    for path, dirs, files in os.walk(root, onerror=onerror):
        if abspath:
            path = os.path.abspath(path)
        if not non_deterministic:
            files.sort()
        for f in files:
            if match_masks(f, masks):
                yield os.path.join(path, f)
        if not recursive:
            break
        if not non_deterministic:
            dirs.sort()


def get_file_binaries_from_pathnames(pathnames, mode: str, encoding=None):
    """``(path, StreamWrapper(open file))`` for each path."""
    if not isinstance(pathnames, (list, tuple)) and not hasattr(pathnames, "__iter__"):
        pathnames = [pathnames]
    if mode in ("b", "t"):
        mode = "r" + mode
    for pathname in pathnames:
        if not isinstance(pathname, str):
            raise TypeError(f"Expected string type for pathname, but got {type(pathname)}")
        yield pathname, StreamWrapper(open(pathname, mode, encoding=encoding))


class StreamWrapper:
    """A file-like object passed between pipes; closes its stream when garbage collected.
    Attribute access and iteration go to the wrapped ``file_obj``."""
    session_streams = {}
    debug_unclosed_streams = False

    def __init__(self, file_obj, parent_stream=None, name=None):
        self.file_obj = file_obj
        self.child_counter = 0
        self.parent_stream = parent_stream
        self.close_on_last_child = False
        self.name = name
        self.closed = False
        if parent_stream is not None:
            if not isinstance(parent_stream, StreamWrapper):
                raise RuntimeError(f"Parent stream should be StreamWrapper, {type(parent_stream)} "
                                   "was given")
            parent_stream.child_counter += 1
            self.parent_stream = parent_stream

    @classmethod
    def close_streams(cls, v, depth=0):
        """Close every StreamWrapper found in ``v`` (nested lists, tuples and dicts)."""
        if depth > 10:
            return
        if isinstance(v, StreamWrapper):
            v.close()
        elif isinstance(v, dict):
            for item in v.values():
                cls.close_streams(item, depth + 1)
        elif isinstance(v, (list, tuple)):
            for item in v:
                cls.close_streams(item, depth + 1)

    def __getattr__(self, name):
        file_obj = self.__dict__["file_obj"]
        return getattr(file_obj, name)

    def close(self, *args, **kwargs):
        if self.closed:
            return
        if self.parent_stream is not None:
            self.parent_stream.child_counter -= 1
            if not self.parent_stream.child_counter and self.parent_stream.close_on_last_child:
                self.parent_stream.close()
        try:
            self.file_obj.close(*args, **kwargs)
        except AttributeError:
            pass
        self.closed = True

    def autoclose(self):
        """Close this stream once its last child stream closes."""
        if self.child_counter == 0:
            self.close()
        self.close_on_last_child = True

    def __dir__(self):
        return list(set(list(self.__dict__.keys()) + dir(self.file_obj)))

    def __del__(self):
        if not self.__dict__.get("closed", True):
            self.close()

    def __iter__(self):
        yield from self.file_obj

    def __next__(self):
        return next(self.file_obj)

    def __repr__(self):
        if self.name is None:
            return f"StreamWrapper<{self.file_obj!r}>"
        return f"StreamWrapper<{self.name},{self.file_obj!r}>"

    def __getstate__(self):
        return self.file_obj

    def __setstate__(self, obj):
        self.file_obj = obj
        self.child_counter, self.parent_stream = 0, None
        self.close_on_last_child, self.name, self.closed = False, None, False
