"""ember.nn.modules.activation (torch.nn.modules.activation), ported onto ember."""
import warnings
import ember as torch
import ember.nn.functional as F
from ember import Tensor
from ember.nn.parameter import Parameter
from ember.nn.modules.module import Module

__all__ = ['Threshold', 'ReLU', 'RReLU', 'Hardtanh', 'ReLU6', 'Sigmoid', 'Hardsigmoid', 'Tanh', 'SiLU', 'Mish', 'Hardswish', 'ELU', 'CELU', 'SELU', 'GLU', 'GELU', 'Hardshrink', 'LeakyReLU', 'LogSigmoid', 'Softplus', 'Softshrink', 'PReLU', 'Softsign', 'Tanhshrink', 'Softmin', 'Softmax', 'Softmax2d', 'LogSoftmax']

class Threshold(Module):
    __constants__ = ['threshold', 'value', 'inplace']
    threshold: float
    value: float
    inplace: bool

    def __init__(self, threshold: float, value: float, inplace: bool=False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ', inplace=True' if self.inplace else ''
        return f'threshold={self.threshold}, value={self.value}{inplace_str}'

class ReLU(Module):
    __constants__ = ['inplace']
    inplace: bool

    def __init__(self, inplace: bool=False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        inplace_str = 'inplace=True' if self.inplace else ''
        return inplace_str

class RReLU(Module):
    __constants__ = ['lower', 'upper', 'inplace']
    lower: float
    upper: float
    inplace: bool

    def __init__(self, lower: float=1.0 / 8, upper: float=1.0 / 3, inplace: bool=False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ', inplace=True' if self.inplace else ''
        return f'lower={self.lower}, upper={self.upper}{inplace_str}'

class Hardtanh(Module):
    __constants__ = ['min_val', 'max_val', 'inplace']
    min_val: float
    max_val: float
    inplace: bool

    def __init__(self, min_val: float=-1.0, max_val: float=1.0, inplace: bool=False, min_value: float | None=None, max_value: float | None=None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn('keyword argument `min_value` is deprecated and renamed to `min_val`', FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn('keyword argument `max_value` is deprecated and renamed to `max_val`', FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f'max_val ({self.max_val}) must be greater than min_val ({self.min_val})')

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ', inplace=True' if self.inplace else ''
        return f'min_val={self.min_val}, max_val={self.max_val}{inplace_str}'

class ReLU6(Hardtanh):

    def __init__(self, inplace: bool=False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        inplace_str = 'inplace=True' if self.inplace else ''
        return inplace_str

class Sigmoid(Module):

    def forward(self, input: Tensor) -> Tensor:
        return torch.sigmoid(input)

class Hardsigmoid(Module):
    __constants__ = ['inplace']
    inplace: bool

    def __init__(self, inplace: bool=False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)

class Tanh(Module):

    def forward(self, input: Tensor) -> Tensor:
        return torch.tanh(input)

class SiLU(Module):
    __constants__ = ['inplace']
    inplace: bool

    def __init__(self, inplace: bool=False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        inplace_str = 'inplace=True' if self.inplace else ''
        return inplace_str

class Mish(Module):
    __constants__ = ['inplace']
    inplace: bool

    def __init__(self, inplace: bool=False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        inplace_str = 'inplace=True' if self.inplace else ''
        return inplace_str

class Hardswish(Module):
    __constants__ = ['inplace']
    inplace: bool

    def __init__(self, inplace: bool=False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)

class ELU(Module):
    __constants__ = ['alpha', 'inplace']
    alpha: float
    inplace: bool

    def __init__(self, alpha: float=1.0, inplace: bool=False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ', inplace=True' if self.inplace else ''
        return f'alpha={self.alpha}{inplace_str}'

class CELU(Module):
    __constants__ = ['alpha', 'inplace']
    alpha: float
    inplace: bool

    def __init__(self, alpha: float=1.0, inplace: bool=False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ', inplace=True' if self.inplace else ''
        return f'alpha={self.alpha}{inplace_str}'

class SELU(Module):
    __constants__ = ['inplace']
    inplace: bool

    def __init__(self, inplace: bool=False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = 'inplace=True' if self.inplace else ''
        return inplace_str

class GLU(Module):
    __constants__ = ['dim']
    dim: int

    def __init__(self, dim: int=-1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f'dim={self.dim}'

class GELU(Module):
    __constants__ = ['approximate']
    approximate: str

    def __init__(self, approximate: str='none') -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f'approximate={repr(self.approximate)}'

class Hardshrink(Module):
    __constants__ = ['lambd']
    lambd: float

    def __init__(self, lambd: float=0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f'{self.lambd}'

class LeakyReLU(Module):
    __constants__ = ['inplace', 'negative_slope']
    inplace: bool
    negative_slope: float

    def __init__(self, negative_slope: float=0.01, inplace: bool=False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ', inplace=True' if self.inplace else ''
        return f'negative_slope={self.negative_slope}{inplace_str}'

class LogSigmoid(Module):

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)

class Softplus(Module):
    __constants__ = ['beta', 'threshold']
    beta: float
    threshold: float

    def __init__(self, beta: float=1.0, threshold: float=20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f'beta={self.beta}, threshold={self.threshold}'

class Softshrink(Module):
    __constants__ = ['lambd']
    lambd: float

    def __init__(self, lambd: float=0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)

def _check_arg_device(x: torch.Tensor | None) -> bool:
    if x is not None:
        return x.device.type in ['cpu', 'cuda']
    return True

def _arg_requires_grad(x: torch.Tensor | None) -> bool:
    if x is not None:
        return x.requires_grad
    return False

def _is_make_fx_tracing():
    if not torch.jit.is_scripting():
        torch_dispatch_mode_stack = torch.utils._python_dispatch._get_current_dispatch_mode_stack()
        return any((type(x) is torch.fx.experimental.proxy_tensor.ProxyTorchDispatchMode for x in torch_dispatch_mode_stack)) or torch.compiler.is_exporting()
    else:
        return False

class PReLU(Module):
    __constants__ = ['num_parameters']
    num_parameters: int

    def __init__(self, num_parameters: int=1, init: float=0.25, device=None, dtype=None) -> None:
        factory_kwargs = {'device': device, 'dtype': dtype}
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(torch.empty(num_parameters, **factory_kwargs))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        torch.nn.init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f'num_parameters={self.num_parameters}'

class Softsign(Module):

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)

class Tanhshrink(Module):

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)

class Softmin(Module):
    __constants__ = ['dim']
    dim: int | None

    def __init__(self, dim: int | None=None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, 'dim'):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f'dim={self.dim}'

class Softmax(Module):
    __constants__ = ['dim']
    dim: int | None

    def __init__(self, dim: int | None=None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, 'dim'):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f'dim={self.dim}'

class Softmax2d(Module):

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f'Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead')
        return F.softmax(input, -3, _stacklevel=5)

class LogSoftmax(Module):
    __constants__ = ['dim']
    dim: int | None

    def __init__(self, dim: int | None=None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, 'dim'):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f'dim={self.dim}'
