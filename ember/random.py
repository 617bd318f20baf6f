"""Random number generators: ``Generator``, the default generator and the module-level
seeding functions (``torch.random``).

A ``Generator`` wraps an engine from ``ember/_kernels/random.py``: NumPy's MT19937 seeded
and transformed the way torch's CPU generator is, so ``manual_seed(s)`` followed by
``rand``/``randn``/``randint``/``randperm`` gives torch's numbers, and ``get_state()`` is
torch's 5056-byte ``ByteTensor`` layout (states can move between ember and torch). See
Note [torch-compatible streams] in that module.
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

from ember._kernels import random as _K

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
           "thread_safe_generator", "Generator", "default_generator"]

_U64 = 0xFFFFFFFFFFFFFFFF


def _nondeterministic_seed():
    return int.from_bytes(os.urandom(8), "little")


def _seed_value(seed, method=False):
    """torch's seed conversion: ints in [-2**63, 2**64); negatives wrap (two's complement)."""
    if method:
        if isinstance(seed, bool) or not hasattr(seed, "__index__"):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = seed.__index__()
    else:
        seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _U64


class Generator:
    """A random number generator (torch.Generator): ``Generator(device='cpu')``."""
    __slots__ = ("_engine", "__weakref__")

    def __init__(self, device="cpu"):
        from ember._device import device as _device
        d = _device(device)
        if d.type != "cpu":
            raise RuntimeError(f"ember has no backend for device '{d}': only the 'cpu' (NumPy) "
                               f"backend is built in, so there is no {d.type} generator")
        self._engine = _K.Engine()

    @classmethod
    def _wrap(cls, engine):
        g = cls.__new__(cls)
        g._engine = engine
        return g

    @property
    def device(self):
        from ember._device import CPU
        return CPU

    def manual_seed(self, seed):
        """Seed the generator; returns it."""
        self._engine.manual_seed(_seed_value(seed, method=True))
        return self

    def seed(self):
        """Seed from the OS's entropy; returns the new seed."""
        s = _nondeterministic_seed()
        self._engine.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed the generator was last seeded with."""
        return self._engine.seed

    def get_state(self):
        """The state as a ``uint8`` tensor (torch's CPUGeneratorImplState layout)."""
        from ember._tensor import _make
        return _make(self._engine.get_state())

    def set_state(self, new_state):
        """Restore a state from ``get_state()`` (ember's or torch's); returns the generator."""
        from ember._tensor import Tensor
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        self._engine.set_state(new_state._data.reshape(-1))
        return self

    def clone_state(self):
        """A new generator with a copy of this one's state."""
        return Generator._wrap(self._engine.clone())

    def graphsafe_get_state(self):
        return self.clone_state()

    def graphsafe_set_state(self, state):
        self._engine = state._engine.clone()
        return self

    def __reduce__(self):
        return (_rebuild_generator, (self._engine.get_state().tobytes(),))

    def __deepcopy__(self, memo):
        return self.clone_state()


def _rebuild_generator(state_bytes):
    g = Generator()
    g._engine.set_state(np.frombuffer(state_bytes, np.uint8))
    return g


# the default CPU generator: seeded from the OS at start-up, like torch's
_K.DEFAULT.manual_seed(_nondeterministic_seed())
default_generator = Generator._wrap(_K.DEFAULT)


def manual_seed(seed):
    """Seed the default generator (every device: ember has only the CPU); returns it."""
    return default_generator.manual_seed(_seed_value(seed))


def seed():
    """Seed the default generator non-deterministically; returns the 64-bit seed."""
    return default_generator.seed()


def initial_seed():
    """The initial seed of the default generator."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a ``uint8`` tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Restore the default generator's state on exit (ember has no accelerator
    generators: naming devices other than the CPU raises)."""
    if device_type == "meta" or not enabled:
        yield
        return
    if devices is not None:
        devices = list(devices)
        if devices:
            from ember._device import to_device
            to_device(f"{device_type or 'cuda'}:{devices[0]}")
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def thread_safe_generator():
    """The worker's generator in a DataLoader thread worker; ``None`` elsewhere."""
    return None
