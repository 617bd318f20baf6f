"""torch.nn.utils.memory_format: give every (transposed) convolution's weight a memory
format, e.g. ``channels_last`` (N, C, H, W stored as N, H, W, C), in place."""
import ember

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, conv_types):
    if isinstance(module, conv_types):
        module.weight.data = module.weight.detach().clone().contiguous(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, conv_types)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """``module`` with each Conv2d/ConvTranspose2d weight (O, I, kH, kW) in ``memory_format``."""
    return _convert(module, memory_format, (ember.nn.Conv2d, ember.nn.ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """``module`` with each Conv3d/ConvTranspose3d weight (O, I, kD, kH, kW) in ``memory_format``."""
    return _convert(module, memory_format, (ember.nn.Conv3d, ember.nn.ConvTranspose3d))
