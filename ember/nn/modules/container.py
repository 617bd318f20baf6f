"""Container modules (torch.nn.modules.container): ``Sequential``, ``ModuleList``,
``ModuleDict``, ``ParameterList``, ``ParameterDict`` and the deprecated ``Container``.

List-like containers store their items in ``_modules``/``_parameters`` under the keys
"0", "1", ...; deleting an item renumbers the rest."""
import operator
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain, islice

from ember import Tensor
from ember.nn.parameter import Parameter
from ember.nn.modules.module import Module, _addindent, _typename

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]


def _norm_index(idx, size):
    """``idx`` as a non-negative position in ``range(size)``; IndexError otherwise."""
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size if size else idx


def _renumber(module):
    module._modules = OrderedDict((str(i), m) for i, m in enumerate(module._modules.values()))


def _no_digit_dir(module):
    return [k for k in Module.__dir__(module) if not k.isdigit()]


def _pairs(items, owner, method, mapping_types):
    """Key/value pairs for ``update``: from ``items.items()`` for the ``mapping_types``, else
    from an iterable of 2-sequences."""
    if not isinstance(items, Iterable):
        raise TypeError(f"{method} should be called with an iterable of key/value pairs, but got "
                        + type(items).__name__)
    if isinstance(items, mapping_types):
        return list(items.items())
    out = []
    for j, pair in enumerate(items):
        if not isinstance(pair, Iterable):
            raise TypeError(f"{owner} update sequence element #{j} should be Iterable; is"
                            + type(pair).__name__)
        if len(pair) != 2:
            raise ValueError(f"{owner} update sequence element #{j} has length {len(pair)}; 2 "
                             "is required")
        out.append((pair[0], pair[1]))
    return out


def _check_factor(seq, n):
    if not isinstance(n, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(n)}")
    if n <= 0:
        raise ValueError(f"Non-positive multiplication factor {n} for {type(seq)}")


def _append_child(owner, module):
    """Register ``module`` under the next number."""
    owner.add_module(str(len(owner)), module)
    return owner


def _pop_child(self, key):
    """Remove and return the child at ``key``."""
    child = self[key]
    del self[key]
    return child


def _insert_numbered(children, index, module):
    """Insert into a dict keyed "0", "1", ...: later entries move up one number."""
    ordered = list(children.values())
    ordered.insert(index, module)
    children.update((str(i), child) for i, child in enumerate(ordered))


class Container(Module):
    """Deprecated: a Module whose keyword arguments become children."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented "
                      "in `nn.Module`. Subclass that instead.", FutureWarning, stacklevel=2)
        for name, child in kwargs.items():
            self.add_module(name, child)


class Sequential(Module):
    """Runs its children in order, feeding each one's output to the next. Built from
    modules (named "0", "1", ...) or from one OrderedDict of named modules."""

    def __init__(self, *args):
        super().__init__()
        named = args[0].items() if len(args) == 1 and isinstance(args[0], OrderedDict) \
            else ((str(i), m) for i, m in enumerate(args))
        for name, module in named:
            self.add_module(name, module)

    def _key_at(self, idx):
        return next(islice(iter(self._modules), _norm_index(idx, len(self)), None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key_at(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key_at(idx), module)

    def __delitem__(self, idx):
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key_at(idx)]
        for key in keys:
            delattr(self, key)
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __dir__(self):
        return _no_digit_dir(self)

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{str(type(other))} is given.")
        return Sequential().extend(self).extend(other)

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{str(type(other))} is given.")
        start = len(self)
        for i, module in enumerate(other):
            self.add_module(str(start + i), module)
        return self

    def __mul__(self, n):
        _check_factor(self, n)
        out = Sequential()
        for i, module in enumerate(list(self) * n):
            out.add_module(str(i), module)
        return out

    def __rmul__(self, n):
        return self.__mul__(n)

    def __imul__(self, n):
        _check_factor(self, n)
        base = [self._modules[str(i)] for i in range(len(self))]
        for i, module in enumerate(base * (n - 1), start=len(base)):
            self.add_module(str(i), module)
        return self

    pop = _pop_child

    def forward(self, input):
        x = input
        for layer in self:
            x = layer(x)
        return x

    def append(self, module):
        return _append_child(self, module)

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        size = len(self._modules)
        if index < -size or index > size:
            raise IndexError(f"Index out of range: {index}")
        _insert_numbered(self._modules, index, module)     # list.insert: negatives count back
        return self

    def extend(self, sequential):
        for layer in sequential:
            self.append(layer)
        return self


class ModuleList(Module):
    """A list of submodules (registered, so their parameters are found)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def _key(self, idx):
        return str(_norm_index(idx, len(self)))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx):
        keys = [str(k) for k in range(len(self._modules))[idx]] if isinstance(idx, slice) \
            else [self._key(idx)]
        for key in keys:
            delattr(self, key)
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        out = ModuleList()
        for i, module in enumerate(chain(self, other)):
            out.add_module(str(i), module)
        return out

    def __dir__(self):
        return _no_digit_dir(self)

    def __repr__(self):
        """Runs of identical children print once: ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []                               # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for first, last, r in runs:
            label = f"({first}): {r}" if first == last \
                else f"({first}-{last}): {last - first + 1} x {r}"
            lines.append(_addindent(label, 2, keep_blank=True))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index, module):
        _insert_numbered(self._modules, index, module)

    def append(self, module):
        return _append_child(self, module)

    pop = _pop_child

    def extend(self, modules):
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        start = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(start + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of submodules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        for key, module in _pairs(modules, "ModuleDict", "ModuleDict.update",
                                  (Mapping, ModuleDict)):
            self[key] = module


def _param_lines(pairs, describe):
    """ParameterList/Dict repr lines: ``  (k): Parameter containing: [<describe(p)> of size
    AxB]`` (torch shows the dtype in a list, the tensor type in a dict)."""
    lines = []
    for k, p in pairs:
        if isinstance(p, Tensor):
            size = "x".join(str(s) for s in p.size())
            dev = f" ({p.device})" if p.device.type in ("cuda", "privateuseone") else ""
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            lines.append(f"  ({k}): {kind} containing: [{describe(p)} of size {size}{dev}]")
        else:
            lines.append(f"  ({k}): Object of type: {type(p).__name__}")
    return "\n".join(lines)


def _as_parameter(value):
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) \
        else value


class ParameterList(Module):
    """A list of parameters; plain tensors are wrapped into Parameters, other objects are
    stored as attributes."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _key(self, idx):
        return str(_norm_index(idx, len(self)))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._key(idx))

    def __setitem__(self, idx, param):
        setattr(self, self._key(idx), _as_parameter(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return _no_digit_dir(self)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")

    def extend(self, values):
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for item in values:
            self.append(item)
        return self

    def append(self, value):
        position = self._size
        self._size = position + 1
        self[position] = value
        return self

    def extra_repr(self):
        return _param_lines(enumerate(self), lambda p: p.dtype)


class ParameterDict(Module):
    """An ordered dict of parameters with string keys; plain tensors become Parameters."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a "
                            f"string (type is '{type(key).__name__}'). Open an issue on github if "
                            "you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._attr(key))

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, self._attr(key), _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        pairs = _pairs(parameters, "ParameterDict", "ParametersDict.update",
                       (Mapping, ParameterDict))
        if isinstance(parameters, Mapping) and not isinstance(parameters, OrderedDict):
            pairs.sort()                                # plain mappings load in key order
        for key, value in pairs:
            self[key] = value

    def extra_repr(self):
        return _param_lines(self.items(), _typename)

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self
