"""float32 1-d/2-d/3-d convolutions on onnxruntime's MLAS kernels, when the optional
``onnx`` extra is installed (``pip install ember[onnx]``); ``EMBER_NO_ORT_CONV=1`` keeps
NumPy's im2col/Winograd path (ember/_kernels/nn_conv.py), as do float64 (onnxruntime's
CPU ``Conv``/``ConvTranspose`` have no double kernels) and the other dtypes.

Four graphs, one ``InferenceSession`` each per (weight shape, parameters, threads), cached
(batch and spatial sizes free; the weight gradient's per shape):

* ``forward``: ``Conv`` — x (N, C, *S), w (O, C/g, *k) -> (N, O, *out);
* ``weight_grad``: ``Conv`` with batch and channel axes swapped — x as (C/g, g*N, *S)
  convolved with gy as (O, N, *out), strides and dilations exchanged, gives
  dL/dw (O, C/g, *k) after a crop and a transpose (all inside the graph);
* ``transpose``: ``ConvTranspose`` — the input gradient (and ``conv_transpose``);
* ``gemm_nt``: ``Gemm`` with ``transB`` — a (M, K) @ (N, K)^T product, the weight gradient's
  GEMM on an im2col built by NumPy (``nn_conv.conv_weight_grad``).

Sessions run on ember's thread count (``ember.get_num_threads``) without spinning, so the
work is split the same way on every call and results are bit-identical run to run (MLAS
splits a convolution over output rows and channels, never over the summed axis, and a
GEMM over rows and columns of the result). ``threads`` overrides the count per call (the
concurrent backward of ``nn_conv.conv_backward`` gives each half of the cores to one).
"""
from __future__ import annotations

import math
import os

import numpy as np

from ember._kernels import split
from ember._kernels.integer_gemm import _onnxruntime, _threads, make_model

_sessions: dict = {}
_MAX_SESSIONS = 256
_state = {"enabled": os.environ.get("EMBER_NO_ORT_CONV", "") in ("", "0"),
          "nchwc": os.environ.get("EMBER_NO_NCHWC", "") in ("", "0")}


def available(x, w, groups, image=None):
    """Whether this float32 convolution (or transposed one) of ``x`` (N, C, *S) with ``w``
    (*, *, *k) runs here, and faster than NumPy's: not for 1x1 kernels (no im2col to save)
    nor images (``S``, or the ``image`` size given) under 64 pixels (7x7x512 ResNet
    layers: 1.1-1.4x slower), measured."""
    image = x.shape[2:] if image is None else image
    return _state["enabled"] and x.dtype == np.float32 and w.dtype == np.float32 and \
        1 <= x.ndim - 2 <= 3 and x.size > 0 and w.size > 0 and \
        math.prod(w.shape[2:]) > 1 and math.prod(image) >= _MIN_PIXELS and \
        _onnxruntime() is not None


_MIN_PIXELS = 64


def _attrs(stride, padding, dilation, groups):
    return dict(strides=list(stride), pads=list(padding) * 2, dilations=list(dilation),
                group=groups)


def _model(nodes, inputs, outputs):
    from onnx import TensorProto, helper
    f = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info(n, f, s)
                                              for n, s in inputs],
                              [helper.make_tensor_value_info(n, f, s) for n, s in outputs])
    return make_model(graph)


def _session(key, build, threads=None, optimize=True):
    """The cached session of ``key`` (``build()`` makes its model); ``optimize=False`` runs
    the graph as built (ember's own NCHWc graphs, ``ort_nchwc.py``)."""
    split.own_pools_ran()       # OpenBLAS held at one thread from now on (Note [one thread plan])
    key = key + (threads or _threads(),)
    s = _sessions.get(key)
    if s is None:
        ort = _onnxruntime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = key[-1]
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if not optimize:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        if len(_sessions) >= _MAX_SESSIONS:
            _sessions.clear()
        s = _sessions[key] = ort.InferenceSession(build().SerializeToString(), options,
                                                  providers=["CPUExecutionProvider"])
    return s


def _free(x):
    """``x``'s (N, C, *S) shape for a graph input, batch and spatial sizes left free (one
    session serves every batch and image size)."""
    return ["N", x.shape[1]] + [f"S{i}" for i in range(x.ndim - 2)]


def _const(name, values):
    from onnx import helper, TensorProto
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_v", TensorProto.INT64, [len(values)], list(values)))


def forward(x, w, stride, padding, dilation, groups, bias=None, threads=None):
    """conv(x (N, C, *S), w (O, C/g, *k)) + bias -> (N, O, *out), float32."""
    from onnx import helper
    from ember._kernels import ort_nchwc
    if _state["nchwc"] and ort_nchwc.usable(x, w, groups):
        return ort_nchwc.forward(x, w, stride, padding, dilation, bias, threads)
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    feeds = {"x": x, "w": w}
    if bias is not None:
        feeds["b"] = np.ascontiguousarray(bias, np.float32)
    params = (tuple(stride), tuple(padding), tuple(dilation), groups)

    def build():
        inputs = [("x", _free(x)), ("w", list(w.shape)), ("b", [w.shape[0]])][:len(feeds)]
        node = helper.make_node("Conv", list(feeds), ["y"], **_attrs(*params))
        return _model([node], inputs, [("y", None)])
    key = ("forward", x.ndim, x.shape[1], w.shape, bias is not None) + params
    return _session(key, build, threads).run(None, feeds)[0]


def weight_grad(x, gy, weight_size, stride, padding, dilation, groups):
    """dL/dw (O, C/g, *k) of conv(x (N, C, *S), w) given gy (N, O, *out), float32."""
    from onnx import helper
    x, gy = np.ascontiguousarray(x), np.ascontiguousarray(gy)
    N, C = x.shape[:2]
    O = gy.shape[1]
    n = x.ndim - 2
    g, Cg, Og = groups, C // groups, O // groups
    ksize = tuple(weight_size[2:])
    spatial = list(range(3, 3 + n))
    params = (tuple(stride), tuple(padding), tuple(dilation), groups)

    def build():
        nodes = [
            _const("xs", (N, g, Cg) + tuple(x.shape[2:])),
            _const("xs2", (Cg, g * N) + tuple(x.shape[2:])),
            _const("gs", (N, g, Og) + tuple(gy.shape[2:])),
            _const("gs2", (O, N) + tuple(gy.shape[2:])),
            _const("starts", [0] * n), _const("ends", ksize),
            _const("axes", list(range(2, 2 + n))),
            helper.make_node("Reshape", ["x", "xs"], ["x5"]),
            helper.make_node("Transpose", ["x5"], ["xt"], perm=[2, 1, 0] + spatial),
            helper.make_node("Reshape", ["xt", "xs2"], ["xc"]),            # Cg, g*N, *S
            helper.make_node("Reshape", ["gy", "gs"], ["g5"]),
            helper.make_node("Transpose", ["g5"], ["gt"], perm=[1, 2, 0] + spatial),
            helper.make_node("Reshape", ["gt", "gs2"], ["gc"]),            # O, N, *out
            helper.make_node("Conv", ["xc", "gc"], ["full"],
                             **_attrs(dilation, padding, stride, groups)),  # Cg, O, >=k
            helper.make_node("Slice", ["full", "starts", "ends", "axes"], ["cut"]),
            helper.make_node("Transpose", ["cut"], ["gw"],
                             perm=[1, 0] + list(range(2, 2 + n))),
        ]
        return _model(nodes, [("x", list(x.shape)), ("gy", list(gy.shape))],
                      [("gw", list(weight_size))])
    key = ("weight_grad", x.shape, gy.shape, tuple(weight_size)) + params
    return _session(key, build).run(None, {"x": x, "gy": gy})[0]


def transpose(x, w, stride, padding, dilation, groups, output_padding, threads=None):
    """conv_transpose(x (N, C, *S), w (C, O/g, *k)) -> (N, O, *out), float32; also the
    input gradient of a convolution."""
    from onnx import helper
    from ember._kernels import ort_nchwc
    if _state["nchwc"] and ort_nchwc.input_grad_usable(x, w, stride, padding, dilation, groups,
                                                      output_padding):
        return ort_nchwc.input_grad(x, w, padding, dilation, threads)
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    params = (tuple(stride), tuple(padding), tuple(dilation), groups, tuple(output_padding))

    def build():
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"],
                                output_padding=list(output_padding), **_attrs(*params[:4]))
        return _model([node], [("x", _free(x)), ("w", list(w.shape))], [("y", None)])
    key = ("transpose", x.ndim, x.shape[1], w.shape) + params
    return _session(key, build, threads).run(None, {"x": x, "w": w})[0]


def gemm_available(a):
    """Whether float32 GEMMs of ``a``'s dtype run here (the switch and the extra)."""
    return _state["enabled"] and a.dtype == np.float32 and _onnxruntime() is not None


def gemm_nt(a, b, threads=None):
    """a (M, K) @ b (N, K)^T -> (M, N), float32, on MLAS's sgemm (``b`` is read transposed in
    place); one session serves every size."""
    from onnx import helper
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)

    def build():
        node = helper.make_node("Gemm", ["a", "b"], ["y"], transB=1)
        return _model([node], [("a", ["M", "K"]), ("b", ["N", "K"])], [("y", None)])
    return _session(("gemm_nt",), build, threads).run(None, {"a": a, "b": b})[0]
