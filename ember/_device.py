"""Devices. ``cpu`` runs on NumPy; ``cuda`` is recognised but has no backend yet."""
from __future__ import annotations


class device:
    """torch.device: ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:1')``."""
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and index is None:
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: {type!r}")
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            type, _, idx = type.partition(":")
            try:
                index = int(idx)
            except ValueError:
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'") from None
        if type not in ("cpu", "cuda", "meta", "mps", "xpu"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta, mps, xpu device type at start of "
                               f"device string: {type}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative")
        self.type, self.index = type, index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")


def to_device(d) -> device:
    """Normalise a device argument and check a backend exists for it."""
    if d is None:
        return CPU
    if not isinstance(d, device):
        d = device(d)
    if d.type != "cpu":
        raise RuntimeError(
            f"ember has no backend for device '{d}': only the 'cpu' (NumPy) backend is built in. "
            f"Torch not compiled with CUDA enabled")
    return CPU
