"""Devices. ``cpu`` runs on NumPy and ``meta`` holds shapes without data
(``ember/_meta_tensor.py``); the other device types torch knows are recognised (they can be
named, compared and printed) but have no backend: moving a tensor or creating one there
raises a RuntimeError naming the missing backend. ``with device(...)`` sets the device
factories use when given none."""
from __future__ import annotations

import re
import threading

_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
          "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_DEVICE_RE = re.compile(r"^([a-zA-Z_]+)(?::(0|[1-9][0-9]*))?$")
_SIGS = (" * (torch.device device)\n * (str type, int index = -1)\n")


class device:
    """torch.device: ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:1')``."""
    __slots__ = ("type", "index")

    def __init__(self, type=None, index=None):
        if isinstance(type, device):
            if index is not None:
                raise TypeError(f"device() received an invalid combination of arguments - got "
                                f"(torch.device, int), but expected one of:\n{_SIGS}")
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({_tname(type)}), but expected one of:\n{_SIGS}")
        if index is not None and not (isinstance(index, int) and not isinstance(index, bool)):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"(str, {_tname(index)}), but expected one of:\n{_SIGS}")
        m = _DEVICE_RE.match(type)
        if m is None:
            if ":" in type and type.split(":", 1)[0] in _TYPES:
                raise RuntimeError(f"Invalid device string: '{type}'")
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of "
                               f"device string: {type}")
        dtype_, idx = m.group(1), m.group(2)
        if dtype_ not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of "
                               f"device string: {type}")
        if idx is not None:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative")
        self.type, self.index = dtype_, index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __format__(self, spec):
        return format(str(self), spec)

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        d = to_device(self)
        _defaults.stack = _defaults.stack + (d,)
        return self

    def __exit__(self, *exc):
        _defaults.stack = _defaults.stack[:-1]
        return False


def _tname(x):
    return "NoneType" if x is None else type(x).__name__


CPU = device("cpu")
META = device("meta")
class _Defaults(threading.local):
    stack = ()      # the devices of the enclosing ``with device(...)`` (class default: fast)


_defaults = _Defaults()


_base_default = [CPU]                # set_default_device's device, under any ``with``


def default_device() -> device:
    """The device factories use when given none (``with device(...)``, else
    ``set_default_device``, else cpu)."""
    stack = _defaults.stack
    return stack[-1] if stack else _base_default[0]


def set_default_device(device) -> None:
    """torch.set_default_device: where factories create tensors (None: back to cpu)."""
    _base_default[0] = CPU if device is None else to_device(device)


def get_default_device() -> device:
    return default_device()


def to_device(d) -> device:
    """Normalise a device argument and check a backend exists for it."""
    if d is None:
        return default_device()
    if not isinstance(d, device):
        d = device(d)
    if d.type == "meta":
        from ember import _meta_tensor
        _meta_tensor.enable()
        return META
    if d.type != "cpu":
        why = f"ember has no backend for device '{d}': only the 'cpu' (NumPy) backend is built in"
        if d.type in ("cuda", "xpu"):             # torch's CPU build: AssertionError
            name = "CUDA" if d.type == "cuda" else "XPU"
            raise NotCompiledError(f"Torch not compiled with {name} enabled ({why})")
        raise NotImplementedError(why)          # (a RuntimeError, as torch's)
    return CPU


class NotCompiledError(AssertionError, RuntimeError):
    """A device backend this build lacks: torch's CPU build raises AssertionError ("Torch
    not compiled with CUDA enabled"); a RuntimeError too, as the error of a missing
    backend."""
