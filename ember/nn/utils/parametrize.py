"""Parametrizations (torch.nn.utils.parametrize): make ``module.<name>`` a computed value
``p_n(...p_1(original))``. The module's class is swapped for a generated subclass
``Parametrized<Class>`` holding a property per parametrized tensor; the originals live in
``module.parametrizations[<name>]`` (a ``ParametrizationList``) as ``original`` or
``original0, original1, ...`` when the first ``right_inverse`` returns several tensors.
Assigning to ``module.<name>`` pushes the value back through the ``right_inverse``s."""
import copyreg
from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy

import ember
from ember import Tensor
from ember.nn.modules.container import Module, ModuleDict, ModuleList
from ember.nn.parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Inside, each parametrized tensor is computed once and reused."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest, src):
    dest.data = src        # ember has no swap_tensors path


def _seq_error(i, value):
    return ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                      f"tuple...). Got element {i} of the sequence with type "
                      f"{type(value).__name__}.")


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor plus its unparametrized original(s)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with ember.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            for what in ("dtype", "device"):
                if getattr(original, what) != getattr(new, what):
                    raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                     f"the {what}.\noriginal.{what}: {getattr(original, what)}\n"
                                     f"right_inverse(original).{what}: {getattr(new, what)}")
            with ember.no_grad():
                _maybe_set(original, new)     # keep the original object (optimizers hold it)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise _seq_error(i, part)
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            for what, before, after in (("dtype", dtype, Z.dtype), ("shape", shape, Z.shape)):
                if before != after:
                    raise ValueError(f"Registering a parametrization may not change the {what} of "
                                     "the tensor, unless `unsafe` flag is enabled.\n"
                                     f"unparametrized {what}: {before}\n"
                                     f"parametrized {what}: {after}")

    def right_inverse(self, value):
        """Store ``value`` as the new original(s), via each parametrization's right_inverse."""
        with ember.no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, t in enumerate(value):
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or "
                                     "reference-type opaques. Got element "
                                     f"{i} of type {type(t).__name__}.")
                orig = getattr(self, f"original{i}")
                if orig.dtype != t.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{t.dtype} while `original{i}` has dtype {orig.dtype}")
                _maybe_set(orig, t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _deepcopy_module(self, memo):
    """Default deepcopy for the generated class (copies ``__dict__`` and slots)."""
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(type(self)):
        if hasattr(self, slot):
            setattr(replica, slot, deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickle(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _inject_new_class(module):
    """Give ``module`` its own subclass so properties can be added per instance."""
    cls = type(module)
    body = {"__getstate__": _refuse_pickle}
    if not hasattr(cls, "__deepcopy__"):
        body["__deepcopy__"] = _deepcopy_module
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), body)


def _inject_property(module, tensor_name):
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get(self):
        chain = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return chain()
        key = (id(module), tensor_name)
        if _cache.get(key) is None:
            _cache[key] = chain()
        return _cache[key]

    def set_(self, value):
        self.parametrizations[tensor_name].right_inverse(value)
    setattr(type(module), tensor_name, property(get, set_))


def _check_same(a, b, head, labels):
    if a != b:
        raise ValueError(f"{head}, unless the `unsafe` flag is enabled.\n"
                         f"{labels[0]}: {a}\n{labels[1]}: {b}")


def _validate_extra(module, tensor_name, parametrization):
    """Checks when adding to an existing chain (without ``unsafe``)."""
    Y = getattr(module, tensor_name)
    X = parametrization(Y)
    if not isinstance(X, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
    where = f"module.{tensor_name}"
    for what in ("dtype", "shape"):
        _check_same(getattr(Y, what), getattr(X, what),
                    f"Registering a parametrization may not change the {what} of the tensor",
                    (f"{where}.{what}", f"parametrization({where}).{what}"))
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        Z = parametrization.right_inverse(X)
    except NotImplementedError:
        return
    if not isinstance(Z, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: "
                         f"{type(Z).__name__}")
    for what in ("dtype", "shape"):
        _check_same(getattr(Y, what), getattr(Z, what),
                    "The tensor returned by parametrization.right_inverse must have the same "
                    f"{what} as {where}", (f"{where}.{what}", f"returned {what}"))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize ``module.<tensor_name>`` by the module ``parametrization`` (appended to the
    chain if one exists). Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _validate_extra(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    chains = getattr(module, "parametrizations", None)
    if not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Make ``module.<tensor_name>`` a plain parameter/buffer again, holding the current
    parametrized value (``leave_parametrized``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with ember.no_grad():
                value = getattr(module, tensor_name)
                try:
                    _maybe_set(original, value)
                except RuntimeError as e:
                    if type(original) is Tensor:
                        raise
                    raise RuntimeError(
                        "Calling remove_parametrizations() with leave_parametrized=True for a "
                        "parameter that is an instance of a tensor subclass requires set_() to "
                        "be implemented correctly for the tensor subclass.Alternatively, one can "
                        "opt into the swap_tensors pathEither set leave_parametrized=False or "
                        "provide a working implementationfor set_() in the tensor subclass or "
                        "set torch.__future__.set_swap_module_params_on_conversion(True).") from e
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that "
                         "is parametrized in terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before ``register_parametrization`` replaced it."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations (and their originals) of ``from_module`` onto
    ``to_module``, for all tensors or just ``tensor_name``."""
    if not is_parametrized(from_module):
        return to_module
    names = from_module.parametrizations if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for p in source:
            register_parametrization(to_module, name, p)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
