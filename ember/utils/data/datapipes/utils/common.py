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
    """Whether file ``name`` matches a glob of ``masks`` (one str or several; empty: all)."""
    if not masks:
        return True
    patterns = (masks,) if isinstance(masks, str) else masks
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def _as_given(path):
    return path


def _walk_failed(err):
    warnings.warn(f"{err.filename} : {err.strerror}")
    raise err


def get_file_pathnames_from_root(root, masks, recursive=False, abspath=False,
                                 non_deterministic=False):
    """Paths of the files under folder ``root`` matching ``masks`` (names sorted per folder
    unless ``non_deterministic``; sub-folders only when ``recursive``), or ``root`` itself
    when it is a matching file."""
    shown = os.path.abspath if abspath else _as_given
    if os.path.isfile(root):
        if match_masks(os.path.basename(shown(root)), masks):
            yield shown(root)
        return
    for folder, subfolders, names in os.walk(root, onerror=_walk_failed):
        if not non_deterministic:
            names = sorted(names)
            subfolders.sort()      # in place: os.walk descends in this order
        folder = shown(folder)
        yield from (os.path.join(folder, n) for n in names if match_masks(n, masks))
        if not recursive:
            return


_SHORT_MODES = {"b": "rb", "t": "rt"}


def get_file_binaries_from_pathnames(pathnames, mode: str, encoding=None):
    """``(path, StreamWrapper(open(path, mode, encoding=encoding)))`` per path; ``b`` and
    ``t`` mean ``rb`` and ``rt``."""
    if not hasattr(pathnames, "__iter__"):
        pathnames = (pathnames,)
    mode = _SHORT_MODES.get(mode, mode)
    for path in pathnames:
        if not isinstance(path, str):
            raise TypeError(f"Expected string type for pathname, but got {type(path)}")
        yield path, StreamWrapper(open(path, mode, encoding=encoding))


class StreamWrapper:
    """A file-like object handed between pipes; attribute access and iteration go to the
    wrapped ``file_obj``, which is closed with the wrapper (or when it is collected).

    A child stream (``parent_stream`` given) counts in its parent's ``child_counter``;
    after ``parent.autoclose()`` the parent closes when its last child does.
    """
    session_streams = {}
    debug_unclosed_streams = False

    def __init__(self, file_obj, parent_stream=None, name=None):
        if parent_stream is not None and not isinstance(parent_stream, StreamWrapper):
            raise RuntimeError(f"Parent stream should be StreamWrapper, {type(parent_stream)} "
                               "was given")
        self._take(file_obj, parent_stream, name)
        if parent_stream is not None:
            parent_stream.child_counter += 1

    def _take(self, file_obj, parent_stream=None, name=None):
        """(Re)start the bookkeeping around ``file_obj``: open, no children."""
        self.file_obj, self.parent_stream, self.name = file_obj, parent_stream, name
        self.child_counter = 0
        self.close_on_last_child = self.closed = False

    @classmethod
    def close_streams(cls, v, depth=0):
        """Close every StreamWrapper inside ``v`` (nested dicts, lists and tuples, at most
        10 levels down)."""
        if depth > 10:
            return
        if isinstance(v, StreamWrapper):
            v.close()
            return
        inner = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else ()
        for item in inner:
            cls.close_streams(item, depth + 1)

    def __getattr__(self, name):
        try:
            wrapped = self.__dict__["file_obj"]
        except KeyError:
            raise AttributeError(name) from None
        return getattr(wrapped, name)

    def _leave_parent(self):
        parent = self.parent_stream
        parent.child_counter -= 1
        if parent.close_on_last_child and parent.child_counter == 0:
            parent.close()

    def close(self, *args, **kwargs):
        """Close ``file_obj`` once (an object without ``close`` is fine)."""
        if self.closed:
            return
        if self.parent_stream is not None:
            self._leave_parent()
        closer = getattr(self.file_obj, "close", None)
        if closer is not None:
            closer(*args, **kwargs)
        self.closed = True

    def autoclose(self):
        """Close now if no child stream is open, else when the last one closes."""
        if not self.child_counter:
            self.close()
        self.close_on_last_child = True

    def __dir__(self):
        return sorted(set(self.__dict__) | set(dir(self.file_obj)))

    def __del__(self):
        if self.__dict__.get("closed") is False:
            self.close()

    def __iter__(self):
        yield from self.file_obj

    def __next__(self):
        return next(self.file_obj)

    def __repr__(self):
        label = "" if self.name is None else f"{self.name},"
        return f"StreamWrapper<{label}{self.file_obj!r}>"

    def __getstate__(self):
        return self.file_obj

    def __setstate__(self, obj):
        self._take(obj)
