"""torch.ao.nn.quantized Conv1d/2d/3d and ConvTranspose1d/2d/3d: quint8 in and out, a
packed qint8 weight (``quantized::conv{n}d_prepack``). state_dict keys: ``weight``,
``bias``, ``scale``, ``zero_point``, as torch's."""
from __future__ import annotations

import copy
from typing import List

import ember
from ember import nn
from ember.ops import quantized as Q
from ember.ao.nn.quantized.modules.linear import _quantize_weight, _is_fused

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_QUANTIZED_PADDING_MODES = ("zeros", "reflect")


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(nn.Module):
    """Shared state of the quantized convolutions; subclasses set ``_NDIM``,
    ``_FLOAT_MODULE`` and ``_TRANSPOSED``."""
    _version = 1
    _NDIM = 2
    _TRANSPOSED = False
    _FLOAT_MODULE = nn.Conv2d

    def _init(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
              output_padding, groups, bias, padding_mode):
        n = self._NDIM
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        if padding_mode not in _QUANTIZED_PADDING_MODES:
            raise ValueError(f"'padding_mode' {padding_mode} is not supported by quantized "
                             "convolution")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride, self.padding = _tuple(stride, n), _tuple(padding, n)
        self.dilation, self.output_padding = _tuple(dilation, n), _tuple(output_padding, n)
        self.transposed = self._TRANSPOSED
        self.groups = groups
        self.padding_mode = padding_mode
        if self.transposed:
            shape = [in_channels, out_channels // groups]
        else:
            shape = [out_channels, in_channels // groups]
        qweight = ember.quantize_per_tensor(ember.zeros(shape + list(self.kernel_size)), 1.0,
                                            0, ember.qint8)
        bias_float = ember.zeros(out_channels, dtype=ember.float) if bias else None
        self.set_weight_bias(qweight, bias_float)
        self.scale = 1.0
        self.zero_point = 0

    # ---------------------------------------------------------------- weight and bias
    def set_weight_bias(self, w, b):
        n = self._NDIM
        if self.transposed:
            prepack = getattr(Q, f"conv_transpose{n}d_prepack")
            self._packed_params = prepack(w, b, list(self.stride), list(self.padding),
                                          list(self.output_padding), list(self.dilation),
                                          self.groups)
        else:
            # other padding modes pad the input in forward and pack no padding (as torch)
            padding = list(self.padding) if self.padding_mode == "zeros" else [0] * n
            prepack = getattr(Q, f"conv{n}d_prepack")
            self._packed_params = prepack(w, b, list(self.stride), padding,
                                          list(self.dilation), self.groups)

    def _weight_bias(self):
        w, b = self._packed_params.unpack()
        if self._NDIM == 1:           # packed as 2-d: (O, C, 1, k)
            w = w.reshape(tuple(w.shape[:2]) + tuple(w.shape[3:]))
        return w, b

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    # ---------------------------------------------------------------- running
    # Each concrete class has its own scriptable ``forward`` calling its
    # ``quantized::conv*`` op directly (as torch's modules do).
    def _padded(self, input):
        """``input`` padded as ``padding_mode`` says ('reflect'); the packed weight then
        holds no padding."""
        if self.padding_mode == "zeros":
            return input
        padding = list(self.padding)
        pad: List[int] = []
        for k in range(len(padding) - 1, -1, -1):    # last dimension first, both sides
            pad.append(padding[k])
            pad.append(padding[k])
        return ember.nn.functional.pad(input, pad, mode=self.padding_mode)

    # ---------------------------------------------------------------- printing, state
    def _get_name(self):
        return "Quantized" + type(self).__name__

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        n = self._NDIM
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias() is None:
            s += ", bias=False"
        return s

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        w, b = self._weight_bias()
        destination[prefix + "weight"] = w
        destination[prefix + "bias"] = b
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.set_weight_bias(state_dict.pop(prefix + "weight"),
                             state_dict.pop(prefix + "bias"))
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    # torch pickles a quantized convolution (torch.save(model)) as this tuple, the packed
    # weight as its unpacked (weight, bias). (torch 2.13's own __setstate__ leaves the module
    # without hooks dicts, so torch cannot run a convolution it loads this way; ember can.)
    def __getstate__(self):
        w, b = self._weight_bias()
        return (self.in_channels, self.out_channels, self.kernel_size, self.stride,
                self.padding, self.dilation, self.transposed, self.output_padding, self.groups,
                self.padding_mode, w, b, self.scale, self.zero_point, self.training)

    def __setstate__(self, state):
        nn.Module.__init__(self)
        (self.in_channels, self.out_channels, kernel_size, stride, padding, dilation,
         self.transposed, output_padding, self.groups, self.padding_mode, w, b, scale,
         zero_point, training) = state
        self.kernel_size, self.stride, self.padding = tuple(kernel_size), tuple(stride), \
            tuple(padding)
        self.dilation, self.output_padding = tuple(dilation), tuple(output_padding)
        self.set_weight_bias(w, b)
        self.scale, self.zero_point = float(scale), int(zero_point)
        self.training = bool(training)

    def __deepcopy__(self, memo):
        """A copy keeping every attribute (hooks too), not only the pickled state."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    # ---------------------------------------------------------------- conversion
    @classmethod
    def _new_like(cls, mod):
        return cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                   mod.padding, mod.dilation, mod.groups, mod.bias is not None,
                   mod.padding_mode)

    @classmethod
    def get_qconv(cls, mod, activation_post_process, weight_post_process=None):
        """The quantized convolution of float ``mod`` with the observers' parameters."""
        if weight_post_process is None:
            weight_post_process = mod.qconfig.weight()
        weight_post_process(mod.weight)
        if weight_post_process.dtype is not ember.qint8:
            raise AssertionError("Weight observer must have a dtype of qint8")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qconv = cls._new_like(mod)
        qconv.set_weight_bias(qweight, mod.bias)
        if activation_post_process is None or activation_post_process.dtype is ember.float:
            return qconv        # dynamic quantization needs no output parameters
        act_scale, act_zp = activation_post_process.calculate_qparams()
        qconv.scale = float(act_scale)
        qconv.zero_point = int(act_zp)
        return qconv

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A quantized convolution from an observed float one (``qconfig`` and
        ``activation_post_process`` set), a fused ConvReLU, or a QAT convolution."""
        if hasattr(mod, "weight_fake_quant"):
            return cls.get_qconv(mod, mod.activation_post_process, mod.weight_fake_quant)
        if type(mod) is not cls._FLOAT_MODULE and not cls._accepts_fused(mod):
            raise AssertionError(f"nnq.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__} but got: "
                                 f"{type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined.")
        activation_post_process = getattr(mod, "activation_post_process", None)
        if _is_fused(mod):
            mod = mod[0]
        return cls.get_qconv(mod, activation_post_process)

    @classmethod
    def _accepts_fused(cls, mod):
        return _is_fused(mod) and type(mod[0]) is cls._FLOAT_MODULE

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        """A quantized convolution from a reference quantized one and the output's
        parameters."""
        qconv = cls._new_like(ref_qconv)
        qconv.set_weight_bias(ref_qconv.get_quantized_weight(), ref_qconv.bias)
        qconv.scale = float(output_scale)
        qconv.zero_point = int(output_zero_point)
        return qconv


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        if isinstance(padding, str):    # torch's packing refuses the string too
            raise RuntimeError(f"quantized::conv{self._NDIM}d_prepack() Expected a value of "
                               "type 'List[int]' for argument 'padding' but instead found "
                               f"type 'str' ({padding!r})")
        self._init(in_channels, out_channels, kernel_size, stride, padding, dilation, 0,
                   groups, bias, padding_mode)


class Conv1d(_Conv):
    """Quantized 1-d convolution: quint8 (N, C, L) -> quint8 (N, O, L')."""
    _NDIM = 1
    _FLOAT_MODULE = nn.Conv1d

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError("Input shape must be `(N, C, L)`!")
        return Q.conv1d(self._padded(input), self._packed_params, self.scale, self.zero_point)


class Conv2d(_Conv):
    """Quantized 2-d convolution: quint8 (N, C, H, W) -> quint8 (N, O, H', W')."""
    _NDIM = 2
    _FLOAT_MODULE = nn.Conv2d

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return Q.conv2d(self._padded(input), self._packed_params, self.scale, self.zero_point)


class Conv3d(_Conv):
    """Quantized 3-d convolution: quint8 (N, C, D, H, W) -> quint8 (N, O, D', H', W')."""
    _NDIM = 3
    _FLOAT_MODULE = nn.Conv3d

    def forward(self, input):
        if input.dim() != 5:
            raise ValueError("Input shape must be `(N, C, D, H, W)`!")
        return Q.conv3d(self._padded(input), self._packed_params, self.scale, self.zero_point)


class _ConvTranspose(_ConvNd):
    _TRANSPOSED = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        self._init(in_channels, out_channels, kernel_size, stride, padding, dilation,
                   output_padding, groups, bias, padding_mode)

    @classmethod
    def _new_like(cls, mod):
        return cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                   mod.padding, mod.output_padding, mod.groups, mod.bias is not None,
                   mod.dilation, mod.padding_mode)


class ConvTranspose1d(_ConvTranspose):
    """Quantized 1-d transposed convolution; weight (C, O/groups, k)."""
    _NDIM = 1
    _FLOAT_MODULE = nn.ConvTranspose1d

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError("Input shape must be `(N, C, L)`!")
        return Q.conv_transpose1d(input, self._packed_params, self.scale, self.zero_point)


class ConvTranspose2d(_ConvTranspose):
    """Quantized 2-d transposed convolution; weight (C, O/groups, kh, kw)."""
    _NDIM = 2
    _FLOAT_MODULE = nn.ConvTranspose2d

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return Q.conv_transpose2d(input, self._packed_params, self.scale, self.zero_point)


class ConvTranspose3d(_ConvTranspose):
    """Quantized 3-d transposed convolution; weight (C, O/groups, kd, kh, kw)."""
    _NDIM = 3
    _FLOAT_MODULE = nn.ConvTranspose3d

    def forward(self, input):
        if input.dim() != 5:
            raise ValueError("Input shape must be `(N, C, D, H, W)`!")
        return Q.conv_transpose3d(input, self._packed_params, self.scale, self.zero_point)
