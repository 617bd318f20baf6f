"""ember.save / ember.load: torch's zip checkpoint format, both directions."""
import importlib
import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

import ember
from ember import serialization


def _np(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def test_ember_to_torch_values_dtypes_strides(tmp_path):
    a = ember.arange(12.).reshape(3, 4)
    obj = {
        "a": a, "col": a[:, 1], "t": a.t(), "i": ember.arange(5), "b": ember.tensor([True, False]),
        "h": ember.ones(3, dtype=ember.float16), "bf": ember.ones(2, dtype=ember.bfloat16),
        "c": ember.tensor([1 + 2j], dtype=ember.complex64), "d64": ember.zeros(2, dtype=ember.float64),
        "u8": ember.arange(4, dtype=ember.uint8), "scalar": ember.tensor(3.5),
        "empty": ember.zeros(0, 3), "dtype": ember.int32, "size": ember.Size([2, 3]),
        "od": collections.OrderedDict(x=1, y=[1.5, "s", None]), "bytes": b"ab",
        "tuple": (1, 2), "set": {1, 2}, "dev": ember.device("cpu"),
    }
    p = tmp_path / "e.pt"
    ember.save(obj, p)
    r = torch.load(p)   # weights_only=True by default
    for k in ("a", "col", "t", "i", "b", "h", "c", "d64", "u8", "scalar", "empty"):
        assert str(r[k].dtype) == str(obj[k].dtype), k
        assert r[k].shape == tuple(obj[k].shape), k
        assert r[k].stride() == obj[k].stride(), k
        assert r[k].storage_offset() == obj[k].storage_offset(), k
        np.testing.assert_array_equal(r[k].numpy(), obj[k].numpy())
    assert r["bf"].dtype == torch.bfloat16 and r["bf"].float().tolist() == [1.0, 1.0]
    assert r["dtype"] is torch.int32
    assert r["size"] == torch.Size([2, 3]) and isinstance(r["size"], torch.Size)
    assert r["od"] == collections.OrderedDict(x=1, y=[1.5, "s", None])
    assert type(r["od"]) is collections.OrderedDict
    assert r["bytes"] == b"ab" and r["tuple"] == (1, 2) and r["set"] == {1, 2}
    assert r["dev"] == torch.device("cpu")
    # shared storage survives: views of one storage stay views
    ptr = r["a"].untyped_storage().data_ptr()
    assert r["col"].untyped_storage().data_ptr() == ptr
    assert r["t"].untyped_storage().data_ptr() == ptr
    r["a"][0, 1] = 100.
    assert r["col"][0].item() == 100. and r["t"][1, 0].item() == 100.


def test_archive_layout(tmp_path):
    p = tmp_path / "model.pt"
    ember.save({"w": ember.ones(3)}, p)
    z = zipfile.ZipFile(p)
    names = z.namelist()
    assert names[0] == "model/data.pkl"
    assert z.read("model/version") == b"3\n"
    assert z.read("model/byteorder") == b"little"
    assert "model/.data/serialization_id" in names and "model/data/0" in names
    raw = open(p, "rb").read()
    for info in z.infolist():     # torch's 64-byte alignment of records
        o = info.header_offset
        fnl, exl = int.from_bytes(raw[o + 26:o + 28], "little"), \
            int.from_bytes(raw[o + 28:o + 30], "little")
        assert (o + 30 + fnl + exl) % 64 == 0
    buf = io.BytesIO()
    ember.save(ember.ones(1), buf)
    assert zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()[0] == "archive/data.pkl"


def test_torch_to_ember(tmp_path):
    a = torch.arange(12.).reshape(3, 4)
    p = torch.nn.Parameter(torch.randn(2, 2))
    obj = {"a": a, "col": a[:, 1], "p": p, "i": torch.arange(3, dtype=torch.int16),
           "bf": torch.ones(2, dtype=torch.bfloat16), "dt": torch.float64,
           "s": torch.Size([1]), "od": collections.OrderedDict(k=torch.zeros(1)),
           "nested": [{"x": (1, 2.5)}], "c": torch.tensor([1j]), "b": b"zz"}
    f = tmp_path / "t.pt"
    torch.save(obj, f)
    r = ember.load(f)
    np.testing.assert_array_equal(r["a"].numpy(), a.numpy())
    assert r["col"].stride() == (4,) and r["col"].storage_offset() == 1
    assert r["col"]._base is r["a"]
    r["a"][0, 1] = 7.
    assert r["col"][0].item() == 7.
    assert r["p"].requires_grad and r["p"].is_leaf
    np.testing.assert_allclose(r["p"].detach().numpy(), p.detach().numpy())
    assert r["i"].dtype is ember.int16 and r["bf"].dtype is ember.bfloat16
    assert r["dt"] is ember.float64 and r["s"] == ember.Size([1])
    assert isinstance(r["s"], ember.Size)
    assert type(r["od"]) is collections.OrderedDict and r["od"]["k"].shape == (1,)
    assert r["nested"] == [{"x": (1, 2.5)}] and r["b"] == b"zz"
    assert r["c"].dtype is ember.complex64


def test_parameter_roundtrip(tmp_path):
    P = importlib.import_module("ember.nn.parameter").Parameter
    w = P(ember.ones(2, 3))
    f = tmp_path / "p.pt"
    ember.save({"w": w, "frozen": P(ember.zeros(1), requires_grad=False)}, f)
    r = torch.load(f)
    assert isinstance(r["w"], torch.nn.Parameter) and r["w"].requires_grad
    assert not r["frozen"].requires_grad
    e = ember.load(f)
    assert isinstance(e["w"], P) and e["w"].requires_grad


def test_bytesio_and_file_objects():
    buf = io.BytesIO()
    ember.save([ember.arange(3)], buf)
    buf.seek(0)
    assert torch.load(buf)[0].tolist() == [0, 1, 2]
    buf.seek(0)
    assert ember.load(buf)[0].tolist() == [0, 1, 2]
    tb = io.BytesIO()
    torch.save(torch.ones(2), tb)
    tb.seek(0)
    assert ember.load(tb).tolist() == [1., 1.]


def test_storage_dtype_conflict():
    a = ember.zeros(4)
    v = a.view(ember.int32)
    assert v._base is None and v._storage_base is a     # torch: a dtype view is no view
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        ember.save([a, v], io.BytesIO())


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_malicious_pickle_refused():
    buf = io.BytesIO()
    torch.save({"x": _Evil()}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL (posix|os)\.system"):
        ember.load(buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(buf, weights_only=True)


class Point:
    def __init__(self, x):
        self.x = x


def test_safe_globals_and_full_load():
    buf = io.BytesIO()
    ember.save({"pt": Point(3)}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        ember.load(buf)
    buf.seek(0)
    with serialization.safe_globals([Point]):
        assert ember.load(buf)["pt"].x == 3
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(buf)
    buf.seek(0)
    assert ember.load(buf, weights_only=False)["pt"].x == 3
    serialization.add_safe_globals([Point])
    try:
        buf.seek(0)
        assert ember.load(buf)["pt"].x == 3
        assert Point in serialization.get_safe_globals()
    finally:
        serialization.clear_safe_globals()


def test_map_location():
    buf = io.BytesIO()
    ember.save({"a": ember.ones(2)}, buf)
    for ml in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s):
        buf.seek(0)
        assert ember.load(buf, map_location=ml)["a"].tolist() == [1., 1.]
    buf.seek(0)
    with pytest.raises(Exception):
        ember.load(buf, map_location="cuda:0")


def test_legacy_and_pickle_module_errors():
    buf = io.BytesIO()          # the legacy format is written too (test_programs_s7.py)
    ember.save(ember.ones(1), buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    assert ember.load(buf).tolist() == [1.]
    buf = io.BytesIO()
    ember.save(ember.ones(1), buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        ember.load(buf, pickle_module=pickle, weights_only=True)
    buf.seek(0)
    assert ember.load(buf, pickle_module=pickle).tolist() == [1.]


def test_requires_grad_and_noncontiguous():
    x = ember.ones(2, 3, requires_grad=True)
    buf = io.BytesIO()
    ember.save({"x": x, "nc": ember.arange(10.)[::3]}, buf)
    buf.seek(0)
    r = torch.load(buf)
    assert r["x"].requires_grad and r["nc"].tolist() == [0., 3., 6., 9.]
    assert r["nc"].stride() == (3,)
    buf.seek(0)
    e = ember.load(buf)
    assert e["x"].requires_grad and e["x"].is_leaf
    assert e["nc"].tolist() == [0., 3., 6., 9.] and e["nc"].stride() == (3,)


def test_state_dict_into_torch_model(tmp_path):
    nn = ember.nn
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    f = tmp_path / "sd.pt"
    ember.save(m.state_dict(), f)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    tm.load_state_dict(torch.load(f))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(tm(torch.from_numpy(x)).detach().numpy(),
                               m(ember.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # and back: torch's state_dict into the ember model
    torch.save(tm.state_dict(), f)
    sd = ember.load(f)
    assert isinstance(sd, collections.OrderedDict)
    m.load_state_dict(sd)


def test_optimizer_style_nested_state():
    state = {"state": {0: {"step": ember.tensor(3.), "exp_avg": ember.zeros(2)}},
             "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0]}]}
    buf = io.BytesIO()
    ember.save(state, buf)
    buf.seek(0)
    r = torch.load(buf)
    assert r["param_groups"][0]["betas"] == (0.9, 0.999)
    assert r["state"][0]["step"].item() == 3.
    buf.seek(0)
    e = ember.load(buf)
    assert e["state"][0]["exp_avg"].tolist() == [0., 0.]


def test_ember_storage_roundtrip():
    t = ember.arange(4.)
    buf = io.BytesIO()
    ember.save({"s": t.untyped_storage()}, buf)
    buf.seek(0)
    r = torch.load(buf)
    assert r["s"].nbytes() == 16
    assert torch.frombuffer(bytearray(bytes(r["s"].tolist())), dtype=torch.float32).tolist() \
        == [0., 1., 2., 3.]
    with pytest.raises(RuntimeError, match="different types"):   # like torch
        ember.save({"s": t.untyped_storage(), "t": t}, io.BytesIO())


def test_plain_pickle_of_tensor():
    x = ember.arange(3.)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == [0., 1., 2.] and y.dtype is ember.float32


def test_safetensors(tmp_path):
    pytest.importorskip("safetensors")
    f = tmp_path / "m.safetensors"
    serialization.save_safetensors({"w": ember.arange(6.).reshape(2, 3), "i": ember.arange(2)}, f)
    r = serialization.load_safetensors(f)
    assert r["w"].tolist() == [[0., 1., 2.], [3., 4., 5.]] and r["i"].dtype is ember.int64
    from safetensors.torch import load_file
    assert load_file(str(f))["w"].shape == (2, 3)


def test_safetensors_missing(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("safetensors"):
            raise ImportError("no")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"pip install ember\[safetensors\]"):
        serialization.load_safetensors("x")
