"""Exact uint8 x int8 GEMM on onnxruntime's MLAS kernels, when the optional ``onnx`` extra
is installed (``pip install ember[onnx]``); the quantized linear and convolution kernels
use it instead of float32 BLAS because it multiplies 8-bit integers directly (VNNI where
the CPU has it), several times faster at the sizes quantized models run.

``MatMulInteger`` accumulates in int32, so its results are the exact integer dot products
(for K below 33,000: 255 * 255 * K < 2**31), the same numbers ember's float32 path
computes; the requantization that follows stays ember's (quantized_gemm.py). One
``InferenceSession`` per weight dtype serves every shape (dimensions symbolic); it runs on
as many threads as ember's BLAS (``ember.get_num_threads``), without spinning.
"""
from __future__ import annotations

import numpy as np

_MAX_K = 33000
_sessions: dict = {}
_runtime = []          # [module] once imported, [None] when the extra is missing


def _onnxruntime():
    """The onnxruntime module when the extra is installed and loads the graphs ember builds
    (else None: the callers keep their NumPy paths)."""
    if not _runtime:
        try:
            import onnx  # noqa: F401  (builds the graph)
            import onnxruntime
        except ImportError:
            onnxruntime = None
        _runtime.append(_probe(onnxruntime) if onnxruntime is not None else None)
    return _runtime[0]


def make_model(graph, opset=13):
    """An ONNX model of ``graph`` at ``opset``, stamped with the oldest IR version that
    opset needs: onnx's default is its own newest IR, which an older onnxruntime refuses
    ("Unsupported model IR version")."""
    from onnx import helper
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = helper.find_min_ir_version_for(opsets)
    return model


def _probe(ort):
    """``ort`` if it runs a one-node graph built like ember's, else None with a warning."""
    from onnx import TensorProto, helper
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "xy"]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe",
                              info[:1], info[1:])
    try:
        ort.InferenceSession(make_model(graph).SerializeToString(),
                             providers=["CPUExecutionProvider"])
    except Exception as e:       # a build whose onnx and onnxruntime disagree
        import warnings
        warnings.warn(f"onnxruntime {ort.__version__} cannot run the graphs ember builds "
                      f"({type(e).__name__}: {str(e)[:200]}); ember's convolutions and "
                      "quantized GEMMs keep their NumPy paths", RuntimeWarning, stacklevel=3)
        return None
    return ort


def available(K):
    """Whether an exact ``K``-long integer GEMM can run on onnxruntime here."""
    return K < _MAX_K and _onnxruntime() is not None



def _threads():
    """ember's thread count (``set_num_threads``, else the CPUs, counted once)."""
    from ember._threads import _settings, _default_threads
    n = _settings["threads"]
    return _default_threads() if n is None else n


def _session(per_column):
    key = (per_column, _threads())
    s = _sessions.get(key)
    if s is None:
        from onnx import TensorProto, helper
        ort = _onnxruntime()
        zp_shape = ["N"] if per_column else []
        graph = helper.make_graph(
            [helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"])],
            "integer_gemm",
            [helper.make_tensor_value_info("a", TensorProto.UINT8, ["M", "K"]),
             helper.make_tensor_value_info("b", TensorProto.INT8, ["K", "N"]),
             helper.make_tensor_value_info("a_zp", TensorProto.UINT8, []),
             helper.make_tensor_value_info("b_zp", TensorProto.INT8, zp_shape)],
            [helper.make_tensor_value_info("y", TensorProto.INT32, ["M", "N"])])
        model = make_model(graph)
        options = ort.SessionOptions()
        options.intra_op_num_threads = key[1]
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        s = _sessions[key] = ort.InferenceSession(model.SerializeToString(), options,
                                                  providers=["CPUExecutionProvider"])
    return s


def zero_points(b_zero_point):
    """A weight's zero point(s) as :func:`matmul` takes them fastest: int8, a scalar when
    all are zero (prepare once per weight)."""
    zp = np.asarray(b_zero_point, np.int8)
    return np.asarray(0, np.int8) if zp.ndim and not zp.any() else zp


def matmul(a, a_zero_point, b, b_zero_point):
    """(M, K) uint8 ``a`` minus ``a_zero_point``, times (K, N) int8 ``b`` minus
    ``b_zero_point`` (a number, or one per column): the exact int32 (M, N) product."""
    zp = b_zero_point if type(b_zero_point) is np.ndarray and b_zero_point.ndim == 0 and \
        b_zero_point.dtype == np.int8 else zero_points(b_zero_point)    # (all zero: scalar)
    feeds = {"a": np.ascontiguousarray(a, np.uint8), "b": b,
             "a_zp": np.asarray(a_zero_point, np.uint8), "b_zp": zp}
    return _session(feeds["b_zp"].ndim == 1).run(None, feeds)[0]
