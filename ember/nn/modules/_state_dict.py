"""State-dict loading for ``Module``: copying one module's own entries, walking the tree,
and the ``(missing_keys, unexpected_keys)`` result."""
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ember import Tensor, no_grad
from ember.nn.parameter import is_lazy

EXTRA_STATE_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns; prints a friendly line when nothing is off."""
    __slots__ = ()

    def __repr__(self):
        if self.missing_keys or self.unexpected_keys:
            return super().__repr__()
        return "<All keys matched successfully>"

    __str__ = __repr__


def _is_tensor_like(x):
    return isinstance(x, Tensor) or hasattr(type(x), "__torch_function__")


def _load_one(module, name, current, value, key, assign, error_msgs):
    """Copy (or with ``assign``, install) checkpoint ``value`` into ``module.<name>``."""
    from ember.nn.parameter import Parameter, is_lazy
    if not _is_tensor_like(value):
        error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                          f"Tensor-like object from checkpoint but received {type(value)}")
        return
    lazy = is_lazy(current)
    if not lazy and len(current.shape) == 0 and len(value.shape) == 1 and value.shape[0] == 1:
        value = value[0]                   # a [1]-shaped entry loads into a scalar
    if not lazy and value.shape != current.shape:
        error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} "
                          f"from checkpoint, the shape in current model is {current.shape}.")
        return
    if current.is_meta and not value.is_meta and not assign:
        warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta "
                      "parameter in the current model, which is a no-op. (Did you mean to pass "
                      "`assign=True` to assign items in the state dictionary to their "
                      "corresponding key in the module instead of copying them in place?)",
                      stacklevel=2)
    try:
        with no_grad():
            if not assign:
                current.copy_(value)
                return
            if isinstance(current, Parameter):
                if isinstance(value, Parameter):
                    value.requires_grad_(current.requires_grad)
                else:
                    value = Parameter(value, requires_grad=current.requires_grad)
            setattr(module, name, value)
    except Exception as ex:
        error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the '
                          f"model are {current.size()} and whose dimensions in the checkpoint "
                          f"are {value.size()}, an exception occurred : {ex.args}.")


def load_own_state(module, state_dict, prefix, local_metadata, strict, missing_keys,
                   unexpected_keys, error_msgs):
    """Body of ``Module._load_from_state_dict``: this module's parameters, persistent buffers
    and extra state (not its children's)."""
    from ember.nn.modules.module import Module
    for hook in module._load_state_dict_pre_hooks.values():
        hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
             error_msgs)
    own = {n: p for n, p in module._parameters.items() if p is not None}
    own.update((n, b) for n, b in module._buffers.items()
               if b is not None and n not in module._non_persistent_buffers_set)
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, current in own.items():
        key = prefix + name
        if key in state_dict:
            value = state_dict[key]
            if is_lazy(current) and isinstance(value, Tensor) and not is_lazy(value):
                with no_grad():      # a lazy module takes its shapes from the checkpoint
                    current.materialize(value.shape)
            _load_one(module, name, current, value, key, assign, error_msgs)
        elif strict:
            missing_keys.append(key)

    extra_key = prefix + EXTRA_STATE_SUFFIX
    if type(module).set_extra_state is not Module.set_extra_state:
        if extra_key in state_dict:
            module.set_extra_state(state_dict[extra_key])
        elif strict:
            missing_keys.append(extra_key)
    elif strict and extra_key in state_dict:
        unexpected_keys.append(extra_key)

    if strict:
        for key in state_dict:
            if not key.startswith(prefix) or key == extra_key:
                continue
            head, dot, _ = key[len(prefix):].partition(".")
            if (dot and head not in module._modules) or (not dot and head not in own):
                unexpected_keys.append(key)


def load_tree(root, state_dict, strict, assign):
    """``Module.load_state_dict``: load every module of the tree, then report."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)       # a copy the hooks may edit
    if metadata is not None:
        state_dict._metadata = metadata
    missing, unexpected, errors = [], [], []

    def visit(module, local, prefix):
        meta = metadata.get(prefix[:-1], {}) if metadata is not None else {}
        if assign:
            meta["assign_to_params_buffers"] = assign
        module._load_from_state_dict(local, prefix, meta, True, missing, unexpected, errors)
        for name, child in module._modules.items():
            if child is not None:
                child_prefix = f"{prefix}{name}."
                visit(child, {k: v for k, v in local.items() if k.startswith(child_prefix)},
                      child_prefix)
        keys = _IncompatibleKeys(missing, unexpected)
        for hook in module._load_state_dict_post_hooks.values():
            if hook(module, keys) is not None:
                raise AssertionError("Hooks registered with "
                                     "``register_load_state_dict_post_hook`` are not expected "
                                     "to return new values, if incompatible_keys need to be "
                                     "modified, it should be done inplace.")

    visit(root, state_dict, "")
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in missing) + ". ")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(root).__name__}:\n\t"
                           + "\n\t".join(errors))
    return _IncompatibleKeys(missing, unexpected)
