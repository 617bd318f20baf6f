"""``RemoteModule``: an ``nn.Module`` built on another RPC worker and called through RPC.

``RemoteModule("ps/cpu", nn.EmbeddingBag, args=(100, 16))`` makes the module on worker
``ps`` (``rpc.remote``); ``forward`` / ``forward_async`` run it there with
``rpc_sync`` / ``rpc_async``, so inside ``dist_autograd.context()`` gradients reach its
parameters, which a ``DistributedOptimizer`` steps through ``remote_parameters()`` (one
RRef per parameter). The handle itself holds no parameters: the ``nn.Module`` methods that
would need them locally raise ValueError. A RemoteModule can be passed to other workers in
RPC arguments (it travels as its worker, device and module RRef).
"""
from __future__ import annotations

from ember import nn
from ember.distributed import rpc

__all__ = ["RemoteModule"]


def _parse(remote_device):
    """``(worker, device)`` of ``"<worker>/<device>"``, ``"rank:<n>/<device>"`` or
    ``"<worker>"`` (device cpu); a rank is given back as an int."""
    if not isinstance(remote_device, str):
        raise TypeError(f"remote_device must be a str, got {type(remote_device).__name__}")
    parts = remote_device.split("/")
    if len(parts) > 2 or not parts[0]:
        raise ValueError(f"Could not parse remote_device: {remote_device}. Expected "
                         f"'<workername>/<device>', 'rank:<rank>/<device>' or '<workername>'")
    worker, device = parts[0], (parts[1] if len(parts) == 2 else "cpu")
    if not device:
        raise RuntimeError("Device string must not be empty")
    if worker.startswith("rank:"):
        try:
            worker = int(worker[5:])
        except ValueError:
            raise ValueError(f"Could not parse remote_device: {remote_device}: the rank "
                             f"after 'rank:' must be an integer") from None
    return worker, device


# --- run on the worker that owns the module (found by name: module-level functions) ---
def _create(module_cls, args, kwargs, device):
    module = module_cls(*args, **kwargs)
    return module if device == "cpu" else module.to(device)


def _forward(module_rref, args, kwargs):
    return module_rref.local_value()(*args, **kwargs)


def _parameter_rrefs(module_rref, recurse):
    return [rpc.RRef(p) for p in module_rref.local_value().parameters(recurse)]


def _set_training(module_rref, mode):
    module_rref.local_value().train(mode)


class RemoteModule(nn.Module):
    """A handle to ``module_cls(*args, **kwargs)`` made on ``remote_device``."""

    def __init__(self, remote_device, module_cls, args=None, kwargs=None):
        super().__init__()
        self._bind(remote_device)
        if not (isinstance(module_cls, type) and issubclass(module_cls, nn.Module)):
            raise TypeError(f"module_cls must be a subclass of nn.Module, got {module_cls!r}")
        self.module_rref = rpc.remote(self.on, _create, args=(
            module_cls, tuple(args or ()), dict(kwargs or {}), self.device))

    def _bind(self, remote_device):
        self.on, self.device = _parse(remote_device)
        self.is_device_map_set = False
        self.is_scriptable = False

    @classmethod
    def init_from_module_rref(cls, remote_device, module_rref, _module_interface_cls=None):
        """A RemoteModule over an existing module RRef (owned by ``remote_device``'s worker)."""
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._bind(remote_device)
        owner = module_rref.owner()
        if self.on not in (owner.name, owner.id):
            raise ValueError(f"remote_device {remote_device} does not name the owner of "
                             f"module_rref ({owner.name})")
        self.module_rref = module_rref
        return self

    def forward(self, *args, **kwargs):
        return rpc.rpc_sync(self.on, _forward, args=(self.module_rref, args, kwargs))

    def forward_async(self, *args, **kwargs):
        """``forward`` as a Future."""
        return rpc.rpc_async(self.on, _forward, args=(self.module_rref, args, kwargs))

    def remote_parameters(self, recurse=True):
        """One RRef per parameter of the remote module (for ``DistributedOptimizer``)."""
        return rpc.rpc_sync(self.on, _parameter_rrefs, args=(self.module_rref, recurse))

    def get_module_rref(self):
        return self.module_rref

    def train(self, mode=True):
        """Set the remote module's training mode (and this handle's ``training``)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        rpc.rpc_sync(self.on, _set_training, args=(self.module_rref, mode))
        self.training = mode
        return self

    def eval(self):
        return self.train(False)

    def __reduce__(self):
        return _rebuild, (self.on, self.device, self.module_rref, self.training)


def _rebuild(on, device, module_rref, training):
    self = RemoteModule.__new__(RemoteModule)
    nn.Module.__init__(self)
    self.on, self.device, self.module_rref, self.training = on, device, module_rref, training
    self.is_device_map_set = self.is_scriptable = False
    return self


def _refuse(name, hint=""):
    def method(self, *args, **kwargs):
        raise ValueError(f"Method ``{name}`` not supported for RemoteModule{hint}")
    method.__name__ = name
    return method


RemoteModule.parameters = _refuse("parameters", ". Please use ``remote_parameters`` instead.")
for _name in ("named_parameters", "buffers", "named_buffers", "children", "named_children",
              "modules", "named_modules", "state_dict", "load_state_dict", "to", "cpu",
              "cuda", "xpu", "ipu", "mtia", "half", "float", "double", "bfloat16", "type",
              "share_memory", "requires_grad_", "zero_grad", "apply", "extra_repr",
              "register_buffer", "register_parameter", "add_module", "register_module",
              "get_submodule", "get_parameter", "get_buffer", "to_empty",
              "register_forward_hook", "register_forward_pre_hook", "register_backward_hook",
              "register_full_backward_hook", "register_full_backward_pre_hook",
              "register_state_dict_pre_hook", "register_load_state_dict_post_hook"):
    setattr(RemoteModule, _name, _refuse(_name))
del _name
