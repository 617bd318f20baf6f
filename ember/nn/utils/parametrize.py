"""Parametrizations (torch.nn.utils.parametrize): make ``module.<name>`` a computed value
``p_n(...p_1(original))``. The module's class is swapped for a generated subclass
``Parametrized<Class>`` holding a property per parametrized tensor; the originals live in
``module.parametrizations[<name>]`` (a ``ParametrizationList``) as ``original`` or
``original0, original1, ...`` when the first ``right_inverse`` returns several tensors.
Assigning to ``module.<name>`` pushes the value back through the ``right_inverse``s."""
import copy
import contextlib
from collections.abc import Sequence

import ember
from ember import Tensor
from ember.nn.modules.container import ModuleDict, ModuleList
from ember.nn.parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]


class _Cache:
    """State of ``cached()``: nesting depth and the values computed inside it."""
    depth = 0
    values = {}


@contextlib.contextmanager
def cached():
    """Inside, each parametrized tensor is computed once and reused."""
    _Cache.depth += 1
    try:
        yield
    finally:
        _Cache.depth -= 1
        if _Cache.depth == 0:
            _Cache.values = {}


def _store(module, name, tensor):
    """Register ``tensor`` as a parameter if it is one, else as a buffer."""
    register = module.register_parameter if isinstance(tensor, Parameter) \
        else module.register_buffer
    register(name, tensor)


def _overwrite(dest, src):
    dest.data = src        # keeps the object (optimizers hold it); ember has no swap path


def _tensor_result(value, what="A parametrization must return a tensor. Got"):
    if not isinstance(value, Tensor):
        raise ValueError(f"{what} {type(value).__name__}.")
    return value


def _unsafe_error(what, labels, values, head=None, article="the "):
    head = head or f"Registering a parametrization may not change the {what} of the tensor"
    return ValueError(f"{head}, unless {article}`unsafe` flag is enabled.\n"
                      f"{labels[0]}: {values[0]}\n{labels[1]}: {values[1]}")


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor plus its unparametrized original(s)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        before = {"dtype": original.dtype, "shape": original.shape}
        stored = self._initial_originals(original)
        self.is_tensor = isinstance(stored, Tensor)
        self.ntensors = 1 if self.is_tensor else len(stored)
        if self.is_tensor:
            self._adopt_single(original, stored)
        else:
            self._adopt_many(original, stored)
        if unsafe:
            return
        result = _tensor_result(self())
        for what, old in before.items():
            if getattr(result, what) != old:
                raise _unsafe_error(what, (f"unparametrized {what}", f"parametrized {what}"),
                                    (old, getattr(result, what)), article="")

    def _initial_originals(self, value):
        """``value`` pushed back through every ``right_inverse`` the chain implements."""
        with ember.no_grad():
            for step in reversed(list(self)):
                inverse = getattr(step, "right_inverse", None)
                if inverse is None:
                    continue
                try:
                    value = inverse(value)
                except NotImplementedError:
                    pass
        if isinstance(value, (Tensor, Sequence)):
            return value
        raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                         f"(list, tuple...). Got {type(value).__name__}")

    def _adopt_single(self, original, value):
        for what in ("dtype", "device"):
            if getattr(original, what) != getattr(value, what):
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the {what}.\noriginal.{what}: {getattr(original, what)}\n"
                                 f"right_inverse(original).{what}: {getattr(value, what)}")
        with ember.no_grad():
            _overwrite(original, value)
        _store(self, "original", original)

    def _adopt_many(self, original, values):
        grad = original.requires_grad
        for i, part in enumerate(values):
            if not isinstance(part, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                 "tensors (list, tuple...). Got element "
                                 f"{i} of the sequence with type {type(part).__name__}.")
            part = Parameter(part, grad) if isinstance(original, Parameter) else part
            _store(self, f"original{i}", part.requires_grad_(grad))

    def _originals(self):
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def right_inverse(self, value):
        """Store ``value`` as the new original(s), via each parametrization's right_inverse."""
        with ember.no_grad():
            for step in reversed(list(self)):
                if not hasattr(step, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(step).__name__} does not "
                                       "implement right_inverse.")
                value = step.right_inverse(value)
            if self.is_tensor:
                _tensor_result(value, "`right_inverse` should return a tensor. Got")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _overwrite(self.original, value)
                return
            self._write_many(value)

    def _write_many(self, values):
        if not isinstance(values, Sequence):
            raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                             f"{type(values).__name__}.")
        if len(values) != self.ntensors:
            raise ValueError("'right_inverse' must return a sequence of tensors of length "
                             f"{self.ntensors}. Got a sequence of length {len(values)}.")
        for i, (dest, new) in enumerate(zip(self._originals(), values)):
            if not isinstance(new, Tensor):
                raise ValueError("'right_inverse' must return a sequence of tensors or "
                                 "reference-type opaques. Got element "
                                 f"{i} of type {type(new).__name__}.")
            if new.dtype != dest.dtype:
                raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                 f"{new.dtype} while `original{i}` has dtype {dest.dtype}")
            _overwrite(dest, new)

    def forward(self):
        first, *rest = list(self)
        value = first(*self._originals())
        for step in rest:
            value = step(value)
        return value


def _deepcopy_module(self, memo):
    """Default deepcopy for the generated class: a new object with a deep-copied
    ``__dict__``."""
    replica = memo.get(id(self))
    if replica is None:
        replica = memo[id(self)] = type(self).__new__(type(self))
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _refuse_pickle(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _make_parametrized_class(module):
    """Give ``module`` its own subclass so properties can be added per instance."""
    base = type(module)
    body = {"__getstate__": _refuse_pickle}
    if not hasattr(base, "__deepcopy__"):
        body["__deepcopy__"] = _deepcopy_module
    module.__class__ = type(f"Parametrized{base.__name__}", (base,), body)


def _add_property(module, tensor_name):
    """``module.<tensor_name>`` reads the chain's output (cached inside ``cached()``) and
    writes through the chain's ``right_inverse``."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")
    key = (id(module), tensor_name)

    def read(self):
        chain = self.parametrizations[tensor_name]
        if not _Cache.depth:
            return chain()
        if _Cache.values.get(key) is None:
            _Cache.values[key] = chain()
        return _Cache.values[key]

    def write(self, value):
        self.parametrizations[tensor_name].right_inverse(value)
    setattr(type(module), tensor_name, property(read, write))


def _check_appended(module, tensor_name, parametrization):
    """Checks when adding to an existing chain (without ``unsafe``): the new step and its
    ``right_inverse`` keep the tensor's dtype and shape."""
    current = getattr(module, tensor_name)
    result = _tensor_result(parametrization(current))
    where = f"module.{tensor_name}"
    for what in ("dtype", "shape"):
        if getattr(current, what) != getattr(result, what):
            raise _unsafe_error(what, (f"{where}.{what}", f"parametrization({where}).{what}"),
                                (getattr(current, what), getattr(result, what)))
    inverse = getattr(parametrization, "right_inverse", None)
    if inverse is None:
        return
    try:
        back = inverse(result)
    except NotImplementedError:
        return
    _tensor_result(back, "parametrization.right_inverse must return a tensor. Got:")
    for what in ("dtype", "shape"):
        if getattr(current, what) != getattr(back, what):
            raise _unsafe_error(what, (f"{where}.{what}", f"returned {what}"),
                                (getattr(current, what), getattr(back, what)),
                                "The tensor returned by parametrization.right_inverse must "
                                f"have the same {what} as {where}")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize ``module.<tensor_name>`` by the module ``parametrization`` (appended to the
    chain if one exists). Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe = chain.unsafe or unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _make_parametrized_class(module)
        module.parametrizations = ModuleDict()
    _add_property(module, tensor_name)
    module.parametrizations[tensor_name] = chain
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    chains = getattr(module, "parametrizations", None)
    if not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def _final_tensor(module, tensor_name, chain, leave_parametrized):
    """What ``remove_parametrizations`` leaves as ``module.<tensor_name>``."""
    if chain.is_tensor:
        kept = chain.original
        if leave_parametrized:
            with ember.no_grad():
                _overwrite(kept, getattr(module, tensor_name))
        return kept
    if not leave_parametrized:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                         "that is parametrized in terms of a sequence of tensors.")
    value = getattr(module, tensor_name)
    return Parameter(value) if value.requires_grad else value


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Make ``module.<tensor_name>`` a plain parameter/buffer again, holding the current
    parametrized value (``leave_parametrized``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    final = _final_tensor(module, tensor_name, module.parametrizations[tensor_name],
                          leave_parametrized)
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _store(module, tensor_name, final)
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
    for name in list(from_module.parametrizations) if tensor_name is None else [tensor_name]:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for step in source:
            register_parametrization(to_module, name, step)
        target = to_module.parametrizations[name]
        if source.is_tensor:
            target.original = source.original
        else:
            for i, orig in enumerate(source._originals()):
                setattr(target, f"original{i}", orig)
    return to_module
