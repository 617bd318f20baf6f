"""torch.nn.parallel's scatter / gather / replicate / parallel_apply, as torch runs them
without an accelerator: the walks over nested inputs (tuples, lists, dicts; other objects
are copied to every device) are real, but moving a tensor to a device needs an accelerator,
so every tensor step raises torch's CPU error (ember has only the CPU)."""
from __future__ import annotations

from ember._tensor import Tensor

__all__ = ["scatter", "scatter_kwargs", "gather", "replicate", "parallel_apply"]


def _check_devices(devices, expected="non cpu"):
    """torch's refusal of a CPU (or index-less) device; integer ids would be accelerators."""
    from ember._device import device as Device
    for d in devices:
        if isinstance(d, int):
            continue
        d = Device(d) if not isinstance(d, Device) else d
        if d.type == "cpu":
            raise ValueError(f"Expected a {expected} device, but got: {d}")
        if d.index is None:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, "
                             f"but got:{d.index}")


def _no_accelerator(kind):
    raise AssertionError(f"{kind} function not implemented for CPU tensors")


def scatter(inputs, target_gpus, dim=0):
    """Split tensors in ``inputs`` into one chunk per device along ``dim`` (nested tuples,
    lists and dicts are walked; any other object is repeated for every device)."""
    def walk(obj):
        if isinstance(obj, Tensor):
            _check_devices(target_gpus)
            if not target_gpus:
                raise RuntimeError("scatter: expected at least one target device")
            _no_accelerator("Scatter")
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(walk, obj)))
        if isinstance(obj, list) and obj:
            return [list(x) for x in zip(*map(walk, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(x) for x in zip(*map(walk, obj.items()))]
        return [obj for _ in target_gpus]
    return walk(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """(scattered inputs, scattered kwargs), padded to the same length with () and {}."""
    ins = scatter(inputs, target_gpus, dim) if inputs else []
    kws = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(ins) < len(kws):
        ins.extend(() for _ in range(len(kws) - len(ins)))
    elif len(kws) < len(ins):
        kws.extend({} for _ in range(len(ins) - len(kws)))
    return tuple(ins), tuple(kws)


def gather(outputs, target_device, dim=0):
    """Concatenate per-device outputs along ``dim`` on ``target_device`` (walking tuples,
    lists and dicts; None stays None)."""
    def walk(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            _no_accelerator("Gather")
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, walk([d[k] for d in outs])) for k in out)
        return type(out)(map(walk, zip(*outs)))
    return walk(outputs)


def replicate(network, devices, detach=False):
    """One copy of ``network`` per device; with no devices, no copies."""
    if not devices:
        return []
    _check_devices(devices)
    _no_accelerator("Broadcast")


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``modules[i](*inputs[i], **kwargs_tup[i])`` on ``devices[i]``, in threads."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the "
                             f"number of inputs {len(inputs)}")
    if kwargs_tup is not None and len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the "
                             f"number of kwargs_tup {len(kwargs_tup)}")
    if devices is None:
        if not modules:
            raise AssertionError("No available accelerator found.")
        raise RuntimeError("Cannot access accelerator device when none is available.")
    _check_devices(devices, "cuda")
    raise RuntimeError("Cannot access accelerator device when none is available.")
