"""Export with ember.onnx, check the file, run it in onnxruntime, compare with ember eager."""
from __future__ import annotations

import io

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def export_bytes(model, args, **kw):
    f = io.BytesIO()
    ember.onnx.export(model, args, f, **kw)
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    return data


def session(data):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _feed(names, args):
    return {n: (a.numpy() if isinstance(a, ember.Tensor) else np.array(a))
            for n, a in zip(names, args)}


def check(model, args, *more_args, names=None, dynamic=None, atol=1e-4, **kw):
    """Export ``model`` on ``args``; run the file on ``args`` and each of ``more_args``
    (other batch sizes: pass ``dynamic``, {input/output name: axes}); outputs within
    ``atol`` of ember's. Returns the ModelProto."""
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    names = names or [f"in{k}" for k in range(len(args))]
    with ember.no_grad():
        first = _flat(model(*args))
    refs = {0: first}
    out_names = [f"out{k}" for k in range(len(first))]
    data = export_bytes(model, args, input_names=names, output_names=out_names,
                        dynamic_axes=dynamic, **kw)
    sess = session(data)
    for k, a in enumerate((args,) + tuple(tuple(m) if isinstance(m, (tuple, list)) else (m,)
                                          for m in more_args)):
        if k not in refs:
            with ember.no_grad():
                refs[k] = _flat(model(*a))
        ref = refs[k]
        got = sess.run(out_names, _feed(names, a))
        assert len(got) == len(ref)
        for r, o in zip(ref, got):
            r = r.numpy() if isinstance(r, ember.Tensor) else np.array(r)
            assert o.shape == r.shape, (o.shape, r.shape)
            np.testing.assert_allclose(o, r, rtol=1e-4, atol=atol)
    return onnx.load_from_string(data)


def op_types(proto):
    return [n.op_type for n in proto.graph.node if n.op_type not in ("Constant", "Identity")]
