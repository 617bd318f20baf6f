"""2-d float32 convolutions on MLAS's blocked-channel (NCHWc) direct kernels, through
onnxruntime's ``com.microsoft.nchwc`` operators (the ``onnx`` extra).

onnxruntime rewrites a ``Conv`` whose filter is a constant into ``ReorderInput`` ->
``nchwc.Conv`` -> ``ReorderOutput``: activations with channels in blocks of ``B`` (16 with
AVX-512, 8 with AVX2) innermost, the filter pre-blocked, and a direct convolution over
them. ember's filters change every training step, so it builds that graph itself with the
filter as an input and blocks the filter with NumPy on each call (a copy the size of the
filter). One thread, 8x64x56x56 3x3: 17.8 ms against ``Conv``'s im2col + GEMM 20.3 ms
(torch/oneDNN 17.5), same results as torch's to the last bit on the layers measured.

Layouts (``B`` the block, ``Op``/``Cp`` the channel counts rounded up to it, zero-filled):

* input of ``C >= B`` channels: ``ReorderInput`` -> (N, Cp/B, H, W, B); the filter
  (O, C, kh, kw) -> (Op/B, Cp/B, kh, kw, B_in, B_out);
* input of ``C < B`` channels (a network's first layer): read as NCHW; the filter
  -> (Op/B, C, kh, kw, B_out);
* output: (N, Op/B, H', W', B), ``ReorderOutput`` crops back to (N, O, H', W').

The input gradient of a stride-1 convolution is itself such a convolution: ``gy``
correlated with the filter transposed (C, O) and turned 180 degrees, padded
``dilation * (k - 1) - padding`` (``input_grad``).
"""
from __future__ import annotations

import numpy as np

from ember._kernels import ort_conv

_DOMAIN = "com.microsoft.nchwc"
_block: list = []


def block_size():
    """MLAS's channel block on this CPU; 1 when its NCHWc kernels do not run here."""
    if not _block:
        _block.append(_probe_block())
    return _block[0]


def _probe_block():
    ort = ort_conv._onnxruntime()
    if ort is None:
        return 1
    from onnx import TensorProto, helper
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("ReorderInput", ["x"], ["y"], domain=_DOMAIN, channels_last=0)],
        "probe", [helper.make_tensor_value_info("x", f, [1, 4, 1, 1])],
        [helper.make_tensor_value_info("y", f, None)])
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        s = ort.InferenceSession(_model(graph).SerializeToString(), options,
                                 providers=["CPUExecutionProvider"])
        return int(s.run(None, {"x": np.zeros((1, 4, 1, 1), np.float32)})[0].shape[1])
    except Exception:                       # no NCHWc kernels in this build or on this CPU
        return 1


def _model(graph):
    from onnx import helper
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid(_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = helper.find_min_ir_version_for(opsets[:1])
    return model


def usable(x, w, groups):
    """Whether conv(x (N, C, H, W), w (O, C, kh, kw)) runs on the NCHWc kernels: dense,
    2-d, float32, a channel count ReorderInput takes (a multiple of 4) or under a block."""
    B = block_size()
    C = x.shape[1]
    return B > 1 and groups == 1 and x.ndim == 4 and x.dtype == np.float32 and \
        w.dtype == np.float32 and (C < B or C % 4 == 0)


def _round_up(n, B):
    return -(-n // B) * B


def blocked_filter(w, B):
    """(O, C, kh, kw) -> MLAS's blocked filter (see the module docstring), stored as
    (Op, C or Cp, kh, kw), float32."""
    O, C, kh, kw = w.shape
    Op = _round_up(O, B)
    if C < B:
        if Op != O:
            w = np.concatenate([w, np.zeros((Op - O, C, kh, kw), w.dtype)])
        return np.ascontiguousarray(
            w.reshape(Op // B, B, C, kh, kw).transpose(0, 2, 3, 4, 1)).reshape(Op, C, kh, kw)
    Cp = _round_up(C, B)
    if (Op, Cp) != (O, C):
        padded = np.zeros((Op, Cp, kh, kw), w.dtype)
        padded[:O, :C] = w
        w = padded
    return np.ascontiguousarray(
        w.reshape(Op // B, B, Cp // B, B, kh, kw).transpose(0, 2, 4, 5, 3, 1)).reshape(Op, Cp, kh, kw)


def _bias(bias, O, B):
    Op = _round_up(O, B)
    b = np.zeros(Op, np.float32)
    b[:O] = bias
    return b


def forward(x, w, stride, padding, dilation, bias=None, threads=None):
    """conv(x (N, C, H, W), w (O, C, kh, kw)) + bias -> (N, O, H', W'), float32."""
    from onnx import TensorProto, helper
    B = block_size()
    x = np.ascontiguousarray(x)
    O, C, kh, kw = w.shape
    feeds = {"x": x, "w": blocked_filter(np.asarray(w, np.float32), B)}
    if bias is not None:
        feeds["b"] = _bias(bias, O, B)
    params = (tuple(stride), tuple(padding), tuple(dilation))
    reorder = C >= B

    def build():
        f = TensorProto.FLOAT
        nodes = []
        src = "x"
        if reorder:
            nodes.append(helper.make_node("ReorderInput", ["x"], ["xb"], domain=_DOMAIN,
                                          channels_last=0))
            src = "xb"
        nodes.append(helper.make_node(
            "Conv", [src] + list(feeds)[1:], ["yb"], domain=_DOMAIN, group=1,
            kernel_shape=[kh, kw], strides=list(stride), pads=list(padding) * 2,
            dilations=list(dilation)))
        nodes.append(helper.make_node("ReorderOutput", ["yb"], ["y"], domain=_DOMAIN,
                                      channels_last=0, channels=O))
        inputs = [helper.make_tensor_value_info("x", f, ["N", C, "H", "W"])] + [
            helper.make_tensor_value_info(k, f, list(v.shape)) for k, v in feeds.items()
            if k != "x"]
        graph = helper.make_graph(nodes, "nchwc_conv", inputs,
                                  [helper.make_tensor_value_info("y", f, None)])
        return _model(graph)
    key = ("nchwc", C, w.shape, bias is not None) + params
    return ort_conv._session(key, build, threads, optimize=False).run(None, feeds)[0]


def input_grad_usable(gy, w, stride, padding, dilation, groups, output_padding):
    """Whether the input gradient of conv(., w) at ``gy`` (N, O, H', W') is an NCHWc
    convolution: stride 1, no output padding, pads within the kernel's reach."""
    if any(s != 1 for s in stride) or any(output_padding) or w.ndim != 4:
        return False
    reach = [d * (k - 1) for d, k in zip(dilation, w.shape[2:])]
    return all(0 <= p <= r for p, r in zip(padding, reach)) and \
        usable(gy, w.transpose(1, 0, 2, 3), groups)


def input_grad(gy, w, padding, dilation, threads=None):
    """dL/dx (N, C, H, W) of a stride-1 conv(x, w (O, C, kh, kw)) given gy (N, O, H', W')."""
    turned = w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]              # (C, O, kh, kw)
    pads = [d * (k - 1) - p for d, k, p in zip(dilation, w.shape[2:], padding)]
    return forward(gy, turned, (1, 1), pads, dilation, threads=threads)
