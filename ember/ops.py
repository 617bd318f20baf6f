"""``torch.ops``: ``ember.ops.aten.<name>`` is the packet of an op's records,
``ember.ops.aten.<name>.<overload>`` (``.default`` for the unnamed one) a single record.

Records are looked up in the op registry (ember/_ops/registry.py) by their schema names
(``add.Tensor``); calling a packet calls the op's public front where ember has one, else
the first overload whose schema binds the arguments.

``ember.ops.profiler`` holds the two profiler ops FX's profiling tracer calls:
``_record_function_enter(name, args=None)`` opens a ``record_function`` range and returns
an opaque uint8 handle tensor, ``_record_function_exit(handle)`` closes it.
"""
from __future__ import annotations

from ember._ops.registry import OPS, FUNCTIONS, bind

__all__ = ["aten", "quantized", "profiler"]


class OpOverloadPacket:
    """All records named ``name`` (``name`` and ``name.<overload>``)."""

    def __init__(self, name, overloads, namespace="aten"):
        self.__name__ = name
        self._namespace = namespace
        self._overloads = overloads            # overload name -> record

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._namespace}.{self.__name__}')>"

    def __str__(self):
        return f"{self._namespace}.{self.__name__}"

    def overloads(self):
        return list(self._overloads)

    def __getattr__(self, overload):
        try:
            return self.__dict__["_overloads"][overload]
        except KeyError:
            raise AttributeError(f"The underlying op of '{self._namespace}.{self.__name__}' has no "
                                 f"overload name '{overload}'") from None

    def __call__(self, *args, **kwargs):
        front = FUNCTIONS.get(self.__name__) if self._namespace == "aten" else None
        if front is not None:
            return front(*args, **kwargs)
        for op in self._overloads.values():
            if len(args) > len(op.argnames):
                continue
            try:
                bind(op, args, dict(kwargs))
            except TypeError:
                continue
            if self._namespace != "aten":
                args, kwargs = _scalar_tensors_as_numbers(op, args, kwargs)
            return op(*args, **kwargs)
        raise TypeError(f"{self._namespace}.{self.__name__}() got arguments no overload "
                        f"accepts")


def _scalar_tensors_as_numbers(op, args, kwargs):
    """0-d tensors given for ``float``/``int`` arguments become numbers, as torch's
    schema parser takes them (FX-quantized graphs pass ``_scale_0`` buffers)."""
    from ember._tensor import Tensor
    kinds = {a.name: a.type for a in op.schema.args if not a.is_list}

    def number(name, value):
        if kinds.get(name) in ("float", "int") and isinstance(value, Tensor) and \
                value.ndim == 0 and not value.is_quantized:
            return value.item()
        return value
    args = tuple(number(name, v) for name, v in zip(op.argnames, args))
    return args, {k: number(k, v) for k, v in kwargs.items()}


class _Namespace:
    """``ember.ops.aten`` (records named ``add.Tensor``) or another namespace (records named
    ``quantized::add``)."""

    def __init__(self, name):
        self._name = name
        self._prefix = "" if name == "aten" else name + "::"
        self._packets = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        packet = self._packets.get(name)
        if packet is None:
            full = self._prefix + name
            overloads = {(key.partition(".")[2] or "default"): op for key, op in OPS.items()
                         if key.partition(".")[0] == full}
            if not overloads:
                raise AttributeError(f"'_OpNamespace' '{self._name}' object has no "
                                     f"attribute '{name}'")
            packet = self._packets[name] = OpOverloadPacket(name, overloads, self._name)
        return packet

    def __repr__(self):
        return f"<ember.ops.{self._name}>"


aten = _Namespace("aten")
quantized = _Namespace("quantized")      # ember/_ops/quantized*.py


# ------------------------------------------------------------------ profiler ops

_open_ranges = {}          # handle number -> entered record_function
_next_handle = [0]


def _record_function_enter(name, args=None):
    """Enter a ``record_function(name, args)`` range; returns its handle tensor."""
    from ember.autograd.profiler import record_function
    import ember
    _next_handle[0] += 1
    number = _next_handle[0]
    _open_ranges[number] = record_function(name, args).__enter__()
    return ember.tensor(list(number.to_bytes(8, "little")), dtype=ember.uint8)


def _record_function_exit(handle):
    """Close the range ``handle`` (from ``_record_function_enter``) opened."""
    number = int.from_bytes(bytes(handle.tolist()), "little")
    opened = _open_ranges.pop(number, None)
    if opened is None:
        raise RuntimeError("_record_function_exit: handle of no open record_function")
    opened.__exit__(None, None, None)


class _PlainOp:
    """A Python-level op with torch's packet face (``op(...)`` and ``op.default(...)``)."""

    def __init__(self, namespace, function):
        self.__name__ = function.__name__
        self._qualified = f"{namespace}.{function.__name__}"
        self.default = function

    def __call__(self, *args, **kwargs):
        from ember.overrides import has_torch_function, handle_torch_function
        relevant = args + tuple(kwargs.values())
        if has_torch_function(relevant):          # an FX Proxy records the call
            return handle_torch_function(self, relevant, *args, **kwargs)
        return self.default(*args, **kwargs)

    def overloads(self):
        return ["default"]

    def __repr__(self):
        return self._qualified


class _PlainNamespace:
    def __init__(self, name, functions):
        self._name = name
        for function in functions:
            setattr(self, function.__name__, _PlainOp(name, function))

    def __repr__(self):
        return f"<ember.ops.{self._name}>"


profiler = _PlainNamespace("profiler", (_record_function_enter, _record_function_exit))


def __getattr__(name):
    """``ember.ops.<ns>`` for a namespace of ops made by ``ember.library.custom_op``."""
    if name.startswith("__"):
        raise AttributeError(name)
    from ember import library
    if any(key.partition("::")[0] == name for key in library._REGISTRY):
        return library.CustomNamespace(name)
    raise AttributeError(f"module 'ember.ops' has no attribute '{name}'")
