"""functional_call (torch.nn.utils.stateless / torch.func.functional_call)."""
import collections
import contextlib
import warnings

from ember import Tensor

__all__ = ["functional_call"]


def _get(module, name):
    *path, last = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, last


def _swap(module, name, value):
    """Set ``module.<name>`` to ``value`` bypassing registration; return the old value."""
    mod, attr = _get(module, name)
    if attr in mod._parameters:
        old = mod._parameters[attr]
        del mod._parameters[attr]
        object.__setattr__(mod, attr, value)
        return ("param", old)
    if attr in mod._buffers:
        old = mod._buffers[attr]
        mod._buffers[attr] = value
        return ("buffer", old)
    if attr in mod.__dict__:
        old = mod.__dict__[attr]
        object.__setattr__(mod, attr, value)
        return ("attr", old)
    if hasattr(mod, attr):
        raise TypeError(f"attribute `{attr}`: {getattr(mod, attr)} is not an instance of "
                        f"torch.Tensor")
    object.__setattr__(mod, attr, value)       # an unexpected key: set for the call only
    return ("new", None)


def _restore(module, name, kind, old):
    mod, attr = _get(module, name)
    if kind == "param":
        if attr in mod.__dict__:
            object.__delattr__(mod, attr)
        mod._parameters[attr] = old
    elif kind == "buffer":
        mod._buffers[attr] = old
    elif kind == "new":
        if attr in mod.__dict__:
            object.__delattr__(mod, attr)
    else:
        object.__setattr__(mod, attr, old)


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False,
                          stack_weights=False):
    if strict:
        expected = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(expected - set(parameters_and_buffers))
        unexpected = sorted(set(parameters_and_buffers) - expected)
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s): " + ", ".join(map(repr, unexpected)) + ".")
            if missing:
                msgs.append("Missing key(s): " + ", ".join(map(repr, missing)) + ".")
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    values = dict(parameters_and_buffers)
    if tie_weights:
        # tied names (same tensor registered twice) take the value given for any of them
        seen = {}
        for n, t in list(module.named_parameters(remove_duplicate=False)) + \
                list(module.named_buffers(remove_duplicate=False)):
            seen.setdefault(id(t), []).append(n)
        for names in seen.values():
            given = [values[n] for n in names if n in values]
            if len({id(v) for v in given}) > 1:
                raise ValueError(f"functional_call got multiple values for keys "
                                 f"{sorted(names)}, which are tied. Consider using "
                                 f"tie_weights=False")
            if given:
                for n in names:
                    values.setdefault(n, given[0])
    saved = []
    # a swapped parameter leaves its module's _parameters and is put back at the end: keep
    # each module's registration order (named_parameters, state_dict) as it was
    orders = [(m._parameters, list(m._parameters)) for m in module.modules()]
    try:
        for name, value in values.items():
            saved.append((name,) + _swap(module, name, value))
        yield
    finally:
        for name, kind, old in reversed(saved):
            _restore(module, name, kind, old)
        for params, order in orders:
            if list(params) != order:
                items = [(k, params.pop(k)) for k in order if k in params]
                params.update(items)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Deprecated spelling of ``torch.func.functional_call`` (warns, then calls it)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameter_and_buffer_dicts, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    """Call ``module`` with its parameters/buffers replaced by the given tensors."""
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    else:
        dicts = list(parameter_and_buffer_dicts)
        seen = collections.Counter(k for d in dicts for k in d)
        repeated = [k for k in seen if seen[k] > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        merged = {k: v for d in dicts for k, v in d.items()}
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, merged, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
