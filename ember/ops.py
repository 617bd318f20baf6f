"""``torch.ops``: ``ember.ops.aten.<name>`` is the packet of an op's records,
``ember.ops.aten.<name>.<overload>`` (``.default`` for the unnamed one) a single record.

Records are looked up in the op registry (ember/_ops/registry.py) by their schema names
(``add.Tensor``); calling a packet calls the op's public front where ember has one, else
the first overload whose schema binds the arguments.
"""
from __future__ import annotations

from ember._ops.registry import OPS, FUNCTIONS, bind

__all__ = ["aten"]


class OpOverloadPacket:
    """All records named ``name`` (``name`` and ``name.<overload>``)."""

    def __init__(self, name, overloads):
        self.__name__ = name
        self._overloads = overloads            # overload name -> record

    def __repr__(self):
        return f"<OpOverloadPacket(op='aten.{self.__name__}')>"

    def overloads(self):
        return list(self._overloads)

    def __getattr__(self, overload):
        try:
            return self.__dict__["_overloads"][overload]
        except KeyError:
            raise AttributeError(f"The underlying op of 'aten.{self.__name__}' has no "
                                 f"overload name '{overload}'") from None

    def __call__(self, *args, **kwargs):
        front = FUNCTIONS.get(self.__name__)
        if front is not None:
            return front(*args, **kwargs)
        for op in self._overloads.values():
            if len(args) > len(op.argnames):
                continue
            try:
                bind(op, args, dict(kwargs))
            except TypeError:
                continue
            return op(*args, **kwargs)
        raise TypeError(f"aten.{self.__name__}() got arguments no overload accepts")


class _Namespace:
    def __init__(self, name):
        self._name = name
        self._packets = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        packet = self._packets.get(name)
        if packet is None:
            overloads = {(key.partition(".")[2] or "default"): op for key, op in OPS.items()
                         if key.partition(".")[0] == name}
            if not overloads:
                raise AttributeError(f"'_OpNamespace' '{self._name}' object has no "
                                     f"attribute '{name}'")
            packet = self._packets[name] = OpOverloadPacket(name, overloads)
        return packet

    def __repr__(self):
        return f"<ember.ops.{self._name}>"


aten = _Namespace("aten")
