"""What wraps every IterDataPipe's ``__iter__``: one live iterator per pipe, ``reset()`` at
the start of each pass, a sample count, and a note naming the pipe on errors."""
import functools
import inspect
import types

_NOTE = "\nThis exception is thrown by __iter__ of "


def _render(value):
    """How a constructor argument is shown in an error note."""
    from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe
    if isinstance(value, (IterDataPipe, MapDataPipe)):
        return type(value).__name__
    if isinstance(value, types.FunctionType):
        return value.__name__
    return repr(value)


def _input_args_string(dp) -> str:
    """``Name(arg=value, ...)``: the constructor arguments the pipe kept, sorted by name."""
    try:
        params = inspect.signature(type(dp).__init__).parameters
    except (TypeError, ValueError):
        params = {}
    kept = sorted((k, v) for k, v in vars(dp).items() if k in params and k != "self")
    return f"{type(dp).__name__}({', '.join(f'{k}={_render(v)}' for k, v in kept)})"


def _add_note(err, dp):
    args = err.args
    if args and isinstance(args[0], str):
        if _NOTE in args[0]:
            return
        err.args = (args[0] + _NOTE + _input_args_string(dp),) + args[1:]
    else:
        err.args = (_NOTE + _input_args_string(dp),)


def _start_pass(dp) -> int:
    """A new iterator takes over ``dp``: it gets the next id and the pipe is reset."""
    dp._valid_iterator_id = 0 if dp._valid_iterator_id is None else dp._valid_iterator_id + 1
    dp._number_of_samples_yielded = 0
    dp.reset()
    return dp._valid_iterator_id


def _check_valid(dp, iterator_id):
    is_valid = getattr(dp, "_is_valid", None)
    if not (is_valid(iterator_id) if is_valid is not None else
            dp._valid_iterator_id == iterator_id):
        custom = getattr(dp, "_invalidated_message", None)
        if custom is not None:
            raise RuntimeError(custom())
        raise RuntimeError(
            "This iterator has been invalidated because another iterator has been created "
            f"from the same IterDataPipe: {_input_args_string(dp)}\n"
            "This may be caused by multiple references to the same IterDataPipe. We "
            "recommend using `.fork()` if that is necessary.\nFor feedback regarding this "
            "single iterator per IterDataPipe constraint, feel free to comment on this "
            "issue: https://github.com/pytorch/data/issues/45.")


def _guarded(dp, gen):
    """Run generator ``gen`` (a pass over ``dp``), starting the pass on first ``next``."""
    iterator_id = _start_pass(dp)
    while True:
        _check_valid(dp, iterator_id)
        try:
            item = next(gen)
        except StopIteration:
            return
        except Exception as err:
            _add_note(err, dp)
            raise
        dp._number_of_samples_yielded += 1
        yield item


class _IteratorDecorator:
    """Wraps the iterator returned by a non-generator ``__iter__`` (often the pipe itself)."""

    def __init__(self, iterator, dp):
        self.iterator, self.dp = iterator, dp
        self.iterator_id = _start_pass(dp)

    def __iter__(self):
        return self

    def __next__(self):
        _check_valid(self.dp, self.iterator_id)
        item = next(self.iterator)      # errors pass through without a note, as in torch
        self.dp._number_of_samples_yielded += 1
        return item

    def __getattr__(self, name):
        return getattr(self.iterator, name)


def hook_iterator(iter_fn):
    """Wrap a class's ``__iter__`` (generator function or not)."""
    if getattr(iter_fn, "_dp_hooked", False):
        return iter_fn
    if inspect.isgeneratorfunction(iter_fn):
        @functools.wraps(iter_fn)
        def wrapped(self, *args, **kwargs):
            return _guarded(self, iter_fn(self, *args, **kwargs))
    else:
        @functools.wraps(iter_fn)
        def wrapped(self, *args, **kwargs):
            result = iter_fn(self, *args, **kwargs)
            return _IteratorDecorator(result if result is not self else _SelfNext(self), self)
    wrapped._dp_hooked = True
    return wrapped


class _SelfNext:
    """The pipe as its own iterator: calls the class's ``__next__``."""

    def __init__(self, dp):
        self.dp = dp

    def __next__(self):
        return type(self.dp).__next__(self.dp)
