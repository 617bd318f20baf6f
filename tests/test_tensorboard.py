"""ember.utils.tensorboard.SummaryWriter: write event files, read them back with
tensorboard's own EventAccumulator."""
import io
import os
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _load(logdir):
    acc = ea.EventAccumulator(str(logdir), size_guidance={
        ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0})
    acc.Reload()
    return acc


def test_scalars_roundtrip(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(5):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
            w.add_scalar("acc", np.float32(step * 0.1), global_step=step)
            w.add_scalar("py", step * 2, step, walltime=1000.0 + step)
    acc = _load(tmp_path)
    assert set(acc.Tags()["scalars"]) == {"loss", "acc", "py"}
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == list(range(5))
    np.testing.assert_allclose([e.value for e in loss], [1 / (s + 1) for s in range(5)],
                               rtol=1e-6)
    py = acc.Scalars("py")
    assert [e.value for e in py] == [0, 2, 4, 6, 8]
    assert [e.wall_time for e in py] == [1000.0 + s for s in range(5)]


def test_scalar_requires_grad_and_bad_shape(tmp_path):
    with SummaryWriter(tmp_path) as w:
        x = ember.ones(1, requires_grad=True) * 3
        w.add_scalar("g", x, 0)
        with pytest.raises(ValueError):
            w.add_scalar("bad", np.ones(3), 0)
    assert _load(tmp_path).Scalars("g")[0].value == 3.0


def test_add_scalars_subdirs(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run", {"a": step, "b": ember.tensor(step * 10.0)}, step)
    for sub, mult in (("run_a", 1), ("run_b", 10)):
        acc = _load(tmp_path / sub)
        ev = acc.Scalars("run")
        assert [e.step for e in ev] == [0, 1, 2]
        assert [e.value for e in ev] == [s * mult for s in range(3)]


def test_histogram(tmp_path):
    rng = np.random.default_rng(0)
    data = rng.standard_normal(1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", ember.tensor(data), 0)
        w.add_histogram("w", data + 1, 1)
        w.add_histogram("fixed", data, 0, bins=10)
    acc = _load(tmp_path)
    h = acc.Histograms("w")
    assert [e.step for e in h] == [0, 1]
    v = h[0].histogram_value
    assert v.num == 1000
    assert sum(v.bucket) == 1000
    assert v.min == pytest.approx(data.min())
    assert v.max == pytest.approx(data.max())
    assert v.sum == pytest.approx(data.sum())
    assert v.sum_squares == pytest.approx((data ** 2).sum())
    f = acc.Histograms("fixed")[0].histogram_value
    assert len(f.bucket) <= 11 and f.bucket[0] == 0 and sum(f.bucket) == 1000
    assert f.bucket_limit[-1] == pytest.approx(data.max())


def _decode(png):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)))


def test_images(tmp_path):
    pytest.importorskip("PIL")
    chw = np.random.default_rng(0).random((3, 8, 12)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", ember.tensor(chw), 0)
        w.add_image("hwc", (chw.transpose(1, 2, 0) * 255).astype(np.uint8), 1,
                    dataformats="HWC")
        w.add_image("hw", np.zeros((5, 7)), 2, dataformats="HW")
        w.add_images("batch", np.ones((10, 1, 4, 6), dtype=np.float32), 3)
    acc = _load(tmp_path)
    assert set(acc.Tags()["images"]) == {"chw", "hwc", "hw", "batch"}
    im = acc.Images("chw")[0]
    assert (im.height, im.width, im.step) == (8, 12, 0)
    dec = _decode(im.encoded_image_string)
    assert dec.shape == (8, 12, 3)
    np.testing.assert_array_equal(dec, (chw.transpose(1, 2, 0) * 255).astype(np.uint8))
    hwc = acc.Images("hwc")[0]
    assert (hwc.height, hwc.width, hwc.step) == (8, 12, 1)
    hw = acc.Images("hw")[0]
    assert (hw.height, hw.width) == (5, 7)
    b = acc.Images("batch")[0]
    # 10 images tiled 8 wide -> 2 rows
    assert (b.height, b.width, b.step) == (8, 48, 3)
    assert _decode(b.encoded_image_string)[:4, :].min() == 255


def test_image_bad_dataformats(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError):
            w.add_image("x", np.zeros((3, 4, 5)), 0, dataformats="HW")


def test_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("note", "hello **world**", 0)
        w.add_text("note", "again", 1)
    acc = _load(tmp_path)
    assert "note/text_summary" in acc.Tags()["tensors"]
    t = acc.Tensors("note/text_summary")
    assert [e.step for e in t] == [0, 1]
    assert t[0].tensor_proto.string_val[0] == b"hello **world**"
    assert acc.SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text"


def test_hparams(tmp_path):
    from tensorboard.plugins.hparams import metadata
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "bsize": 32, "opt": "sgd", "nesterov": True},
                      {"hparam/acc": 0.9, "hparam/loss": ember.tensor(0.25)},
                      run_name="trial")
    acc = _load(tmp_path / "trial")
    content = acc.PluginTagToContent("hparams")
    assert set(content) == {metadata.EXPERIMENT_TAG, metadata.SESSION_START_INFO_TAG,
                            metadata.SESSION_END_INFO_TAG}
    exp = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
    assert {h.name for h in exp.hparam_infos} == {"lr", "bsize", "opt", "nesterov"}
    assert {m.name.tag for m in exp.metric_infos} == {"hparam/acc", "hparam/loss"}
    ssi = metadata.parse_session_start_info_plugin_data(
        content[metadata.SESSION_START_INFO_TAG])
    assert ssi.hparams["lr"].number_value == 0.1
    assert ssi.hparams["bsize"].number_value == 32
    assert ssi.hparams["opt"].string_value == "sgd"
    assert ssi.hparams["nesterov"].bool_value is True
    assert acc.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    assert acc.Scalars("hparam/loss")[0].value == 0.25


def test_default_logdir_comment_flush_close(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp", filename_suffix=".ember")
    assert w.log_dir.startswith("runs" + os.sep) and w.log_dir.endswith("_exp")
    w.add_scalar("x", 1.0, 0)
    w.flush()
    files = os.listdir(w.log_dir)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    assert files[0].endswith(".ember")
    assert _load(w.log_dir).Scalars("x")[0].value == 1.0
    w.close()
    w.close()  # idempotent


def test_purge_step(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for s in range(5):
            w.add_scalar("x", s, s)
    with SummaryWriter(tmp_path, purge_step=3) as w:
        for s in range(3, 6):
            w.add_scalar("x", s * 10, s)
    ev = _load(tmp_path).Scalars("x")
    assert [e.step for e in ev] == [0, 1, 2, 3, 4, 5]
    assert [e.value for e in ev] == [0, 1, 2, 30, 40, 50]


def test_missing_tensorboard_names_extra(tmp_path, monkeypatch):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith("tensorboard."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match=r"ember\[tensorboard\]"):
        SummaryWriter(tmp_path)
