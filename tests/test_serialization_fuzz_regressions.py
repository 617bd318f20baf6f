"""Regressions found by differential fuzzing of ember.save / ember.load against torch."""
import collections
import io
import os
import pickle

import numpy as np
import pytest
import torch

import ember
from ember import serialization


def _legacy(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=False, **kw)
    buf.seek(0)
    return buf


def _np(t):
    t = t.detach()
    if t.dtype in (torch.bfloat16, ember.bfloat16):
        t = t.float()
    return np.asarray(t.numpy())


_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dt", _DTYPES)
def test_legacy_format_values_dtypes_strides(dt):
    base = (torch.arange(48.).reshape(6, 8) - 20).to(getattr(torch, dt))
    obj = {"base": base, "t": base.t(), "sl": base[1:5:2, 3:], "col": base[:, 5],
           "s0": torch.tensor(3).to(getattr(torch, dt)), "empty": torch.zeros(0, 3).to(base.dtype)}
    r = ember.load(_legacy(obj))
    for k, v in obj.items():
        assert str(r[k].dtype) == str(v.dtype), k
        assert tuple(r[k].shape) == tuple(v.shape), k
        if v.numel():
            assert r[k].stride() == v.stride(), k
            assert r[k].storage_offset() == v.storage_offset(), k
        np.testing.assert_array_equal(_np(r[k]), _np(v))


def test_legacy_format_sharing_and_write_through():
    base = torch.arange(12.).reshape(3, 4)
    r = ember.load(_legacy({"base": base, "t": base.t(), "row": base[1], "other": torch.ones(2)}))
    assert r["t"].untyped_storage().data_ptr() == r["base"].untyped_storage().data_ptr()
    r["base"][1, 2] = -7.
    assert r["t"][2, 1].item() == -7. and r["row"][2].item() == -7.
    assert r["other"].tolist() == [1., 1.]


def test_legacy_format_state_dicts_paths_and_map_location(tmp_path):
    m = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    m(torch.ones(1, 3)).sum().backward()
    opt.step()
    obj = {"m": m.state_dict(), "o": opt.state_dict(), "p": torch.nn.Parameter(torch.ones(2)),
           "meta": [1, "s", None, b"b", (2.5,), collections.OrderedDict(k=1)],
           "size": torch.Size([2, 3]), "dtype": torch.bfloat16, "dev": torch.device("cpu")}
    p = tmp_path / "legacy.pt"
    torch.save(obj, p, _use_new_zipfile_serialization=False)
    for src in (p, str(p)):
        for ml in (None, "cpu", {"cpu": "cpu"}, lambda s, loc: s):
            r = ember.load(src, map_location=ml)
            np.testing.assert_array_equal(_np(r["m"]["weight"]), _np(m.weight))
            st = r["o"]["state"][0]
            np.testing.assert_array_equal(_np(st["exp_avg"]), _np(opt.state_dict()["state"][0]["exp_avg"]))
            assert r["o"]["param_groups"][0]["lr"] == 0.1
            assert isinstance(r["p"], ember.nn.Parameter) and r["p"].requires_grad
            assert r["meta"] == obj["meta"] and type(r["meta"][5]) is collections.OrderedDict
            assert tuple(r["size"]) == (2, 3) and r["dtype"] is ember.bfloat16
            assert str(r["dev"]) == "cpu"
    with open(p, "rb") as fh:
        assert ember.load(fh)["p"].tolist() == [1., 1.]
    # an explicit pickle_module with weights_only unset loads unrestricted, like torch
    assert ember.load(_legacy(torch.arange(3)), pickle_module=pickle).tolist() == [0, 1, 2]


def test_legacy_format_weights_only_refuses_code():
    buf = _legacy({"x": _Joiner()})
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(buf)
    buf.seek(0)
    assert ember.load(buf, weights_only=False) == {"x": os.path.join("a", "b")}


def test_legacy_format_typed_storage():
    r = ember.load(_legacy(torch.arange(6.)[2:].storage()))
    assert r.dtype is ember.float32 and r.tolist() == [0., 1., 2., 3., 4., 5.]


class _Joiner:
    def __reduce__(self):
        return (os.path.join, ("a", "b"))


def test_mmap_needs_a_path_and_a_zip_file(tmp_path):
    buf = io.BytesIO()
    ember.save({"a": ember.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(ValueError, match="file path"):
        ember.load(buf, mmap=True)
    p = tmp_path / "l.pt"
    torch.save({"a": torch.ones(2)}, p, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        ember.load(p, mmap=True)
    p2 = tmp_path / "z.pt"
    torch.save({"a": torch.ones(2)}, p2)
    assert ember.load(p2, mmap=True)["a"].tolist() == [1., 1.]


def test_frozenset_not_allowed_by_weights_only():
    buf = io.BytesIO()
    torch.save({"f": frozenset([1])}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(buf)            # the reference refuses it too
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="frozenset"):
        ember.load(buf)
    buf.seek(0)
    assert ember.load(buf, weights_only=False) == {"f": frozenset([1])}


def test_saved_untyped_storage_loads_as_uint8_typed_storage():
    buf = io.BytesIO()
    torch.save(torch.arange(2, dtype=torch.int16).untyped_storage(), buf)
    buf.seek(0)
    t = torch.load(buf)
    buf.seek(0)
    e = ember.load(buf)
    assert type(t).__name__ == type(e).__name__ == "TypedStorage"
    assert e.dtype is ember.uint8 and e.tolist() == t.tolist() == [0, 0, 1, 0]


def test_save_into_missing_directory_is_runtime_error(tmp_path):
    target = tmp_path / "nodir" / "x.pt"
    with pytest.raises(RuntimeError, match="Parent directory"):
        torch.save({"a": 1}, target)
    with pytest.raises(RuntimeError, match="Parent directory"):
        ember.save({"a": 1}, target)


def test_map_location_of_unsupported_kind_is_type_error():
    buf = io.BytesIO()
    ember.save({"a": ember.ones(2)}, buf)
    for lib in (torch, ember):
        buf.seek(0)
        with pytest.raises(TypeError, match="not callable"):
            lib.load(buf, map_location=5)


def test_safetensors_zero_dim_and_non_tensor(tmp_path):
    stt = pytest.importorskip("safetensors.torch")
    p = tmp_path / "a.safetensors"
    serialization.save_safetensors({"s": ember.tensor(2.5), "bf": ember.ones(2, dtype=ember.bfloat16),
                                    "t": ember.arange(6.).reshape(2, 3).t()}, p)
    r = stt.load_file(str(p))
    assert r["s"].shape == () and r["s"].item() == 2.5
    assert r["bf"].dtype == torch.bfloat16 and r["bf"].tolist() == [1., 1.]
    assert r["t"].tolist() == [[0., 3.], [1., 4.], [2., 5.]]
    e = serialization.load_safetensors(p)
    assert e["s"].shape == () and e["s"].item() == 2.5
    with pytest.raises(ValueError, match="expected torch.Tensor"):
        serialization.save_safetensors({"k": 1}, tmp_path / "b.safetensors")
