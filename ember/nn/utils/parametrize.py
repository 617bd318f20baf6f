import collections
import copyreg
from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy
import types

import ember as torch
from ember import Tensor
from ember.nn.modules.container import Module, ModuleDict, ModuleList
from ember.nn.parameter import Parameter


class OpaqueBase:     # torch._opaque_base.OpaqueBase: nothing is opaque in ember
    pass


def is_opaque_reference_type(tp):
    return False


def get_swap_module_params_on_conversion():
    return False


def is_traceable_wrapper_subclass(t):
    return False


class _Jit:
    @staticmethod
    def is_scripting():
        return False

    @staticmethod
    def unused(fn):
        return fn


class _C:
    @staticmethod
    def _get_tracing_state():
        return None
__all__ = ['cached', 'ParametrizationList', 'register_parametrization', 'is_parametrized', 'remove_parametrizations', 'type_before_parametrizations', 'transfer_parametrizations_and_params']
_cache_enabled = 0
_cache = {}

@contextmanager
def cached():
    global _cache
    global _cache_enabled
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
    should_swap = get_swap_module_params_on_conversion() or is_traceable_wrapper_subclass(dest)
    if should_swap:
        if isinstance(dest, Parameter) and (not isinstance(src, Parameter)):
            src = Parameter(src, requires_grad=dest.requires_grad)
        torch.utils.swap_tensors(dest, src)
    else:
        dest.data = src

class ParametrizationList(ModuleList):

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError('ParametrizationList requires one or more modules.')
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape = original.shape
        original_dtype = original.dtype
        with torch.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, 'right_inverse'):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and (not isinstance(new, Sequence)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f'When `right_inverse` outputs one tensor, it may not change the dtype.\noriginal.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}')
            if original.device != new.device:
                raise ValueError(f'When `right_inverse` outputs one tensor, it may not change the device.\noriginal.device: {original.device}\nright_inverse(original).device: {new.device}')
            with torch.no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, 'original', original)
        else:
            for i, originali in enumerate(new):
                match originali:
                    case OpaqueBase():
                        if not is_opaque_reference_type(type(originali)):
                            raise ValueError(f"'right_inverse' must return a Tensor or a reference-type opaque. Got element {i} of the sequence with type {type(originali).__name__}.")
                        setattr(self, f'original{i}', originali)
                    case Tensor():
                        if isinstance(original, Parameter):
                            originali = Parameter(originali, original.requires_grad)
                        originali.requires_grad_(original.requires_grad)
                        _register_parameter_or_buffer(self, f'original{i}', originali)
                    case _:
                        raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got element {i} of the sequence with type {type(originali).__name__}.")
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f'A parametrization must return a tensor. Got {type(Z).__name__}.')
            if Z.dtype != original_dtype:
                raise ValueError(f'Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\nparametrized dtype: {Z.dtype}')
            if Z.shape != original_shape:
                raise ValueError(f'Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\nunparametrized shape: {original_shape}\nparametrized shape: {Z.shape}')

    def right_inverse(self, value):
        with torch.no_grad():
            for module in reversed(self):
                if hasattr(module, 'right_inverse'):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f'parametrization {type(module).__name__} does not implement right_inverse.')
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f'`right_inverse` should return a tensor. Got {type(value).__name__}')
                if value.dtype != self.original.dtype:
                    raise ValueError(f'The tensor returned by `right_inverse` has dtype {value.dtype} while `original` has dtype {self.original.dtype}')
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. Got a sequence of length {len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f'original{i}')
                    match tensor:
                        case OpaqueBase():
                            if is_opaque_reference_type(type(tensor)):
                                setattr(self, f'original{i}', tensor)
                                continue
                        case Tensor():
                            if original_i.dtype != tensor.dtype:
                                raise ValueError(f'Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while `original{i}` has dtype {original_i.dtype}')
                            _maybe_set(original_i, tensor)
                            continue
                    raise ValueError(f"'right_inverse' must return a sequence of tensors or reference-type opaques. Got element {i} of type {type(tensor).__name__}.")

    def forward(self):
        if _Jit.is_scripting():
            raise RuntimeError('Parametrization is not working with scripting.')
        if self.is_tensor:
            x = self[0](self.original)
        else:
            originals = (getattr(self, f'original{i}') for i in range(self.ntensors))
            x = self[0](*originals)
        curr_idx = 1
        while hasattr(self, str(curr_idx)):
            x = self[curr_idx](x)
            curr_idx += 1
        return x

def _inject_new_class(module):
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = deepcopy(self.__dict__, memo)
        slots_to_save = copyreg._slotnames(self.__class__)
        for slot in slots_to_save:
            if hasattr(self, slot):
                setattr(replica, slot, deepcopy(getattr(self, slot), memo))
        return replica

    def getstate(self):
        raise RuntimeError('Serialization of parametrized modules is only supported through state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training')
    dct = {'__getstate__': getstate}
    if not hasattr(cls, '__deepcopy__'):
        dct['__deepcopy__'] = default_deepcopy
    param_cls = type(f'Parametrized{cls.__name__}', (cls,), dct)
    module.__class__ = param_cls

def _inject_property(module, tensor_name):
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    @_Jit.unused
    def get_cached_parametrization(parametrization):
        global _cache
        key = (id(module), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = parametrization()
            _cache[key] = tensor
        return tensor

    def get_parametrized(self):
        if _Jit.is_scripting():
            raise RuntimeError('Parametrization is not working with scripting.')
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            if _Jit.is_scripting():
                raise RuntimeError('Caching is not implemented for scripting. Either disable caching or avoid scripting.')
            elif _C._get_tracing_state() is not None:
                raise RuntimeError('Cannot trace a model while caching parametrizations.')
            else:
                return get_cached_parametrization(parametrization)
        else:
            return parametrization()

    def set_original(self, value):
        if _Jit.is_scripting():
            raise RuntimeError('Parametrization is not working with scripting.')
        self.parametrizations[tensor_name].right_inverse(value)
    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))

def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f'A parametrization must return a tensor. Got {type(X).__name__}.')
            if X.dtype != Y.dtype:
                raise ValueError(f'Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\nparametrization(module.{tensor_name}).dtype: {X.dtype}')
            if X.shape != Y.shape:
                raise ValueError(f'Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {Y.shape}\nparametrization(module.{tensor_name}).shape: {X.shape}')
            if hasattr(parametrization, 'right_inverse'):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError(f'parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}')
                    if Z.dtype != Y.dtype:
                        raise ValueError(f'The tensor returned by parametrization.right_inverse must have the same dtype as module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\nreturned dtype: {Z.dtype}')
                    if Z.shape != Y.shape:
                        raise ValueError(f'The tensor returned by parametrization.right_inverse must have the same shape as module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {Y.shape}\nreturned shape: {Z.shape}')
        if not isinstance(module.parametrizations, ModuleDict):
            raise AssertionError(f'Expected module.parametrizations to be a ModuleDict, got {type(module.parametrizations).__name__}')
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        if not isinstance(module.parametrizations, ModuleDict):
            raise AssertionError(f'Expected module.parametrizations to be a ModuleDict, got {type(module.parametrizations).__name__}')
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name '{tensor_name}'")
    return module

def is_parametrized(module, tensor_name=None):
    parametrizations = getattr(module, 'parametrizations', None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    else:
        return tensor_name in parametrizations

def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    if not is_parametrized(module, tensor_name):
        raise ValueError(f'Module {module} does not have a parametrization on {tensor_name}')
    if not isinstance(module.parametrizations, ModuleDict):
        raise AssertionError(f'Expected module.parametrizations to be a ModuleDict, got {type(module.parametrizations).__name__}')
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if not isinstance(original, torch.Tensor):
            raise AssertionError(f'Expected original to be a Tensor (is_tensor promised us a Tensor), got {type(original).__name__}')
        if leave_parametrized:
            with torch.no_grad():
                t = getattr(module, tensor_name)
            with torch.no_grad():
                if type(original) is torch.Tensor:
                    _maybe_set(original, t)
                else:
                    try:
                        _maybe_set(original, t)
                    except RuntimeError as e:
                        raise RuntimeError('Calling remove_parametrizations() with leave_parametrized=True for a parameter that is an instance of a tensor subclass requires set_() to be implemented correctly for the tensor subclass.Alternatively, one can opt into the swap_tensors pathEither set leave_parametrized=False or provide a working implementationfor set_() in the tensor subclass or set torch.__future__.set_swap_module_params_on_conversion(True).') from e
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t
    else:
        raise ValueError('Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a sequence of tensors.')
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, 'parametrizations')
        orig_cls = module.__class__.__bases__[0]
        module.__class__ = orig_cls
    return module

def type_before_parametrizations(module):
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    else:
        return type(module)

def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    if is_parametrized(from_module):
        if not isinstance(from_module.parametrizations, ModuleDict):
            raise AssertionError(f'Expected from_module.parametrizations to be a ModuleDict, got {type(from_module.parametrizations).__name__}')
        parameters_to_transfer = from_module.parametrizations if tensor_name is None else [tensor_name]
        if not hasattr(parameters_to_transfer, '__iter__'):
            raise AssertionError(f'Expected parameters_to_transfer to be iterable, got {type(parameters_to_transfer).__name__}')
        for parameter_name in parameters_to_transfer:
            if not hasattr(to_module, parameter_name):
                setattr(to_module, parameter_name, Parameter(getattr(from_module, parameter_name)))
            for param_func in from_module.parametrizations[parameter_name]:
                register_parametrization(to_module, parameter_name, param_func)
            if not isinstance(to_module.parametrizations, ModuleDict):
                raise AssertionError(f'Expected to_module.parametrizations to be a ModuleDict, got {type(to_module.parametrizations).__name__}')
            if hasattr(from_module.parametrizations[parameter_name], 'original'):
                to_module.parametrizations[parameter_name].original = from_module.parametrizations[parameter_name].original
            else:
                num = 0
                orig_num = 'original' + str(num)
                while hasattr(from_module.parametrizations[parameter_name], orig_num):
                    setattr(to_module.parametrizations[parameter_name], orig_num, getattr(from_module.parametrizations[parameter_name], orig_num))
                    num = num + 1
                    orig_num = 'original' + str(num)
    return to_module
