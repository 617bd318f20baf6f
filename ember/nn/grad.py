"""torch.nn.grad: gradients of convolutions with respect to their input or weight,
computed with ember's convolution backward ops (ember/_ops/nn_conv.py).

``convNd_input(input_size, weight, grad_output)`` -> (N, C_in, *spatial) input gradient;
``convNd_weight(input, weight_size, grad_output)`` -> (C_out, C_in/groups, *k) weight gradient.
"""
from ember._ops.nn_conv import convolution, conv_weight_grad, _ntuple, _tpad

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(nd, input_size, weight, grad_output, stride, padding, dilation, groups):
    stride, padding, dilation = (_ntuple(v, nd) for v in (stride, padding, dilation))
    input_size = list(input_size)
    if len(input_size) != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional input for {nd + 2}-dimensional weight "
                           f"{list(weight.shape)}, but got {len(input_size)}-dimensional input "
                           f"of size {input_size} instead")
    op = _tpad(input_size, grad_output.shape, weight.shape[2:], stride, padding, dilation)
    if any(p < 0 or p >= max(s, d) for p, s, d in zip(op, stride, dilation)):
        raise RuntimeError(f"conv{nd}d_input: requested an input grad size of {input_size[2:]}, which is not "
                         f"reachable from grad_output of shape {list(grad_output.shape[2:])}")
    return convolution(grad_output, weight, None, stride, padding, dilation, True, op, groups)


def _weight_grad(nd, input, weight_size, grad_output, stride, padding, dilation, groups):
    stride, padding, dilation = (_ntuple(v, nd) for v in (stride, padding, dilation))
    return conv_weight_grad(input, grad_output, list(weight_size), stride, padding, dilation,
                            groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv1d with respect to its (N, C_in, L) input."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv1d with respect to its (C_out, C_in/groups, k) weight."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv2d with respect to its (N, C_in, H, W) input."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv2d with respect to its (C_out, C_in/groups, kH, kW) weight."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv3d with respect to its (N, C_in, D, H, W) input."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv3d with respect to its (C_out, C_in/groups, kD, kH, kW) weight."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
