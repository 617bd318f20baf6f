"""ember.vision.utils (make_grid, save_image, draw_bounding_boxes), ember.vision.io (via
Pillow) and the lazy ember.vision namespace."""
import io
import subprocess
import sys

import numpy as np
import pytest

import ember
from helpers import import_torchvision
import ember.vision as ev
from ember.vision import io as eio, utils as eutils

Image = pytest.importorskip("PIL.Image")

RNG = np.random.default_rng(0)


def _torchvision():
    torch = pytest.importorskip("torch")
    return torch, import_torchvision()


def pair(a):
    torch, _ = _torchvision()
    a = np.ascontiguousarray(a)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


# ----------------------------------------------------------------------------- namespace
def test_lazy_submodules():
    code = ("import sys, ember.vision as v; assert 'ember.vision.transforms' not in sys.modules; "
            "t = v.transforms; assert 'ember.vision.transforms' in sys.modules; "
            "assert v.utils.make_grid and v.io.read_image and t.Compose; "
            "assert 'torch' not in sys.modules and 'torchvision' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    with pytest.raises(AttributeError):
        ev.not_a_submodule
    assert "transforms" in dir(ev)


def test_missing_pillow_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(ImportError, match=r"ember\[images\]"):
        eio.encode_png(ember.zeros(3, 2, 2, dtype=ember.uint8))
    with pytest.raises(ImportError, match=r"ember\[images\]"):
        ev.transforms.ToPILImage()(ember.zeros(3, 2, 2))


# ----------------------------------------------------------------------------- make_grid
@pytest.mark.parametrize("kw", [dict(), dict(nrow=3), dict(nrow=2, padding=0), dict(padding=3, pad_value=0.7),
                                dict(normalize=True), dict(normalize=True, value_range=(0.2, 0.6)),
                                dict(normalize=True, scale_each=True, nrow=4)])
@pytest.mark.parametrize("shape", [(5, 3, 6, 7), (7, 1, 4, 5), (1, 3, 4, 4), (3, 4, 5), (1, 4, 5), (4, 5)])
def test_make_grid(kw, shape):
    _, tv = _torchvision()
    a = (RNG.random(shape) * 3 - 1).astype(np.float32)
    e, t = pair(a)
    eo, to = eutils.make_grid(e, **kw), tv.utils.make_grid(t, **kw)
    assert tuple(eo.shape) == tuple(to.shape)
    np.testing.assert_allclose(eo.numpy(), to.numpy(), atol=1e-6)


def test_make_grid_list_no_grad():
    torch, tv = _torchvision()
    imgs = [RNG.random((3, 4, 5)).astype(np.float32) for _ in range(3)]
    es = [ember.from_numpy(i).requires_grad_(True) for i in imgs]
    ts = [torch.from_numpy(i).requires_grad_(True) for i in imgs]
    eo, to = eutils.make_grid(es, nrow=2, normalize=True), tv.utils.make_grid(ts, nrow=2, normalize=True)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-6)
    assert eo.requires_grad is to.requires_grad is False      # torchvision runs it under no_grad
    with pytest.raises(TypeError):
        eutils.make_grid(np.zeros((2, 3, 4, 4)))
    with pytest.raises(TypeError):
        eutils.make_grid(ember.zeros(2, 3, 4, 4), normalize=True, value_range=[0, 1])


def test_save_image(tmp_path):
    _, tv = _torchvision()
    a = RNG.random((6, 3, 5, 4)).astype(np.float32)
    e, t = pair(a)
    eutils.save_image(e, tmp_path / "e.png", nrow=3, padding=1)
    tv.utils.save_image(t, tmp_path / "t.png", nrow=3, padding=1)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "e.png")),
                                  np.asarray(Image.open(tmp_path / "t.png")))
    buf = io.BytesIO()
    eutils.save_image(e[0], buf, format="JPEG")
    assert Image.open(io.BytesIO(buf.getvalue())).format == "JPEG"


@pytest.mark.parametrize("kw", [dict(), dict(colors="red", width=3), dict(fill=True, colors=["blue", (0, 255, 0), "#ff00ff"]),
                                dict(labels=["a", "bb", "ccc"])])
def test_draw_bounding_boxes(kw):
    torch, tv = _torchvision()
    img = RNG.integers(0, 256, (3, 30, 40), dtype=np.uint8)
    boxes = np.array([[1, 2, 10, 12], [5, 5, 30, 25], [20, 3, 39, 29]], dtype=np.float32)
    e, t = pair(img)
    eo = eutils.draw_bounding_boxes(e, ember.from_numpy(boxes), **kw)
    to = tv.utils.draw_bounding_boxes(t, torch.from_numpy(boxes), **kw)
    assert eo.dtype == ember.uint8
    np.testing.assert_array_equal(eo.numpy(), to.numpy())
    assert not np.array_equal(eo.numpy(), img)
    with pytest.raises(ValueError):
        eutils.draw_bounding_boxes(e, ember.tensor([[5.0, 5.0, 1.0, 1.0]]))


# ----------------------------------------------------------------------------- io
def test_image_read_mode():
    assert [m.value for m in (eio.ImageReadMode.UNCHANGED, eio.ImageReadMode.GRAY, eio.ImageReadMode.GRAY_ALPHA,
                              eio.ImageReadMode.RGB, eio.ImageReadMode.RGB_ALPHA)] == [0, 1, 2, 3, 4]
    assert eio.ImageReadMode.RGBA is eio.ImageReadMode.RGB_ALPHA


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_roundtrip(tmp_path, channels):
    a = RNG.integers(0, 256, (channels, 9, 11), dtype=np.uint8)
    enc = eio.encode_png(ember.from_numpy(a), compression_level=9)
    assert enc.dtype == ember.uint8 and enc.dim() == 1
    raw = enc.numpy().tobytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    ref = np.asarray(Image.open(io.BytesIO(raw)))
    np.testing.assert_array_equal(ref.reshape(9, 11, channels).transpose(2, 0, 1), a)
    np.testing.assert_array_equal(eio.decode_png(enc).numpy(), a)
    np.testing.assert_array_equal(eio.decode_image(enc).numpy(), a)
    p = tmp_path / "x.png"
    eio.write_png(ember.from_numpy(a), str(p))
    np.testing.assert_array_equal(eio.read_image(str(p)).numpy(), a)
    np.testing.assert_array_equal(eio.read_file(str(p)).numpy(), np.frombuffer(p.read_bytes(), np.uint8))


def test_read_modes(tmp_path):
    a = RNG.integers(0, 256, (12, 10, 4), dtype=np.uint8)
    pim = Image.fromarray(a)
    p = tmp_path / "rgba.png"
    pim.save(p)
    for mode, pil_mode in [(eio.ImageReadMode.GRAY, "L"), (eio.ImageReadMode.GRAY_ALPHA, "LA"),
                           (eio.ImageReadMode.RGB, "RGB"), (eio.ImageReadMode.RGB_ALPHA, "RGBA")]:
        ref = np.asarray(pim.convert(pil_mode))
        ref = ref[:, :, None] if ref.ndim == 2 else ref
        got = eio.read_image(p, mode)
        assert got.dtype == ember.uint8
        np.testing.assert_array_equal(got.numpy(), ref.transpose(2, 0, 1))
    np.testing.assert_array_equal(eio.read_image(p, "RGB").numpy(), np.asarray(pim.convert("RGB")).transpose(2, 0, 1))
    pal = pim.convert("RGB").convert("P")
    pal.save(tmp_path / "p.png")
    np.testing.assert_array_equal(eio.read_image(tmp_path / "p.png").numpy(),
                                  np.asarray(pal.convert("RGB")).transpose(2, 0, 1))


def test_jpeg(tmp_path):
    a = RNG.integers(0, 256, (3, 16, 24), dtype=np.uint8)
    for q in (30, 95):
        enc = eio.encode_jpeg(ember.from_numpy(a), quality=q)
        buf = io.BytesIO()
        Image.fromarray(a.transpose(1, 2, 0).copy()).save(buf, format="JPEG", quality=q)
        assert enc.numpy().tobytes() == buf.getvalue()
        dec = eio.decode_jpeg(enc)
        np.testing.assert_array_equal(dec.numpy(), np.asarray(Image.open(buf)).transpose(2, 0, 1))
    hi = eio.decode_jpeg(eio.encode_jpeg(ember.from_numpy(a), quality=100)).numpy().astype(int)
    lo = eio.decode_jpeg(eio.encode_jpeg(ember.from_numpy(a), quality=10)).numpy().astype(int)
    assert np.abs(hi - a).mean() < np.abs(lo - a).mean()
    gray = eio.decode_jpeg(eio.encode_jpeg(ember.from_numpy(a)), mode=eio.ImageReadMode.GRAY)
    assert tuple(gray.shape) == (1, 16, 24)
    p = tmp_path / "x.jpg"
    eio.write_jpeg(ember.from_numpy(a), str(p), quality=80)
    assert Image.open(p).format == "JPEG"
    assert tuple(eio.read_image(p).shape) == (3, 16, 24)
    with pytest.raises(RuntimeError):
        eio.decode_png(eio.encode_jpeg(ember.from_numpy(a)))
    with pytest.raises(RuntimeError):
        eio.encode_jpeg(ember.zeros(3, 4, 4))          # float input
    with pytest.raises(ValueError):
        eio.encode_jpeg(ember.from_numpy(a), quality=0)
    with pytest.raises(RuntimeError):
        eio.decode_image(ember.from_numpy(np.arange(20, dtype=np.uint8)))


def test_io_to_transforms_roundtrip(tmp_path):
    """read_image -> ConvertImageDtype -> ToPILImage agrees with PIL's own decode."""
    a = RNG.integers(0, 256, (7, 5, 3), dtype=np.uint8)
    Image.fromarray(a).save(tmp_path / "a.png")
    t = eio.read_image(str(tmp_path / "a.png"))
    f = ev.transforms.ConvertImageDtype(ember.float32)(t)
    np.testing.assert_allclose(f.numpy(), a.transpose(2, 0, 1) / 255.0, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(ev.transforms.ToPILImage()(t)), a)
