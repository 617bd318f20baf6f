"""TorchScript graph-mode quantization (torch.ao.quantization.quantize_jit): not available in
ember, whose TorchScript support does not run quantization passes. Each entry point raises
NotImplementedError naming the eager and FX alternatives."""
from __future__ import annotations

__all__ = ["script_qconfig", "script_qconfig_dict", "fuse_conv_bn_jit", "prepare_jit",
           "prepare_dynamic_jit", "convert_jit", "convert_dynamic_jit", "quantize_jit",
           "quantize_dynamic_jit"]


def _refuse(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"torch.ao.quantization.{name}: TorchScript graph-mode quantization is not "
            f"supported in ember; use eager mode (prepare/convert, quantize_dynamic) or FX "
            f"graph mode (ember.ao.quantization.quantize_fx)")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Not supported in ember (raises NotImplementedError): {name}."
    return fn


script_qconfig = _refuse("script_qconfig")
script_qconfig_dict = _refuse("script_qconfig_dict")
fuse_conv_bn_jit = _refuse("fuse_conv_bn_jit")
prepare_jit = _refuse("prepare_jit")
prepare_dynamic_jit = _refuse("prepare_dynamic_jit")
convert_jit = _refuse("convert_jit")
convert_dynamic_jit = _refuse("convert_dynamic_jit")
quantize_jit = _refuse("quantize_jit")
quantize_dynamic_jit = _refuse("quantize_dynamic_jit")
