"""ember.vision.datasets and ember.vision.ops against torchvision (and, where torchvision's
C++ kernels are not loadable, against straightforward ports of those kernels' loops)."""
import gzip
import math
import os
import pickle
import struct
import sys

import numpy as np
import pytest

import ember
from helpers import import_torchvision
import ember.vision.datasets as datasets
import ember.vision.ops as ops

torch = pytest.importorskip("torch")
PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402





def _e(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# ----------------------------------------------------------------------------- datasets

def test_fakedata_matches_torchvision():
    tv = import_torchvision()
    ours = datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4, random_offset=3)
    ref = tv.datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4, random_offset=3)
    assert len(ours) == 5
    ember.manual_seed(123)
    before = ember.rand(3).numpy()
    ember.manual_seed(123)
    for i in range(5):
        img, target = ours[i]
        rimg, rtarget = ref[i]
        assert isinstance(img, Image.Image) and img.mode == rimg.mode and img.size == rimg.size
        np.testing.assert_array_equal(np.asarray(img), np.asarray(rimg))
        assert target == rtarget and isinstance(target, int)
    # the global RNG state is restored around each item
    np.testing.assert_array_equal(ember.rand(3).numpy(), before)
    with pytest.raises(IndexError):
        ours[5]
    assert repr(ours) == repr(ref)


def test_fakedata_transforms_and_repr():
    ds = datasets.FakeData(size=2, image_size=(1, 4, 4), transform=lambda im: np.asarray(im),
                           target_transform=lambda t: t + 100)
    img, t = ds[0]
    assert img.shape == (4, 4) and img.dtype == np.uint8 and 100 <= t < 110
    r = repr(ds)
    assert r.startswith("Dataset FakeData\n    Number of datapoints: 2\n    StandardTransform\n")
    assert "Transform: " in r and "Target transform: " in r


def _write_pngs(root):
    rng = np.random.default_rng(0)
    for cls, n in (("cat", 2), ("dog", 3)):
        os.makedirs(os.path.join(root, cls, "sub"), exist_ok=True)
        for i in range(n):
            arr = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
            sub = "sub" if i == 2 else ""
            Image.fromarray(arr).save(os.path.join(root, cls, sub, f"{i}.png"))
        with open(os.path.join(root, cls, "notes.txt"), "w") as f:
            f.write("not an image")
    os.makedirs(os.path.join(root, "empty"))


def test_imagefolder_matches_torchvision(tmp_path):
    tv = import_torchvision()
    root = str(tmp_path)
    _write_pngs(root)
    with pytest.raises(FileNotFoundError, match="empty"):
        datasets.ImageFolder(root)
    ours = datasets.ImageFolder(root, allow_empty=True)
    ref = tv.datasets.ImageFolder(root, allow_empty=True)
    assert ours.classes == ref.classes == ["cat", "dog", "empty"]
    assert ours.class_to_idx == ref.class_to_idx
    assert ours.samples == ref.samples and ours.imgs == ours.samples
    assert ours.targets == ref.targets == [0, 0, 1, 1, 1]
    for i in range(len(ref)):
        (a, ta), (b, tb) = ours[i], ref[i]
        assert ta == tb and a.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert repr(ours) == repr(ref)


def test_datasetfolder_is_valid_file_and_loader(tmp_path):
    root = str(tmp_path)
    _write_pngs(root)
    ds = datasets.DatasetFolder(root, loader=lambda p: os.path.getsize(p),
                                is_valid_file=lambda p: p.endswith(".txt"), allow_empty=True)
    assert len(ds) == 2 and ds.targets == [0, 1]
    assert isinstance(ds[0][0], int)
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        datasets.DatasetFolder(root, loader=open)
    ds = datasets.DatasetFolder(root, loader=lambda p: p, extensions=(".txt",), allow_empty=True)
    assert [os.path.basename(p) for p, _ in ds.samples] == ["notes.txt", "notes.txt"]
    assert ds.find_classes(root)[0] == ["cat", "dog", "empty"]
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.ImageFolder(os.path.join(root, "empty"))


def _idx(data, gz=False):
    data = np.asarray(data, dtype=np.uint8)
    header = struct.pack(">I", (8 << 8) | data.ndim) + b"".join(struct.pack(">I", d) for d in data.shape)
    raw = header + data.tobytes()
    return gzip.compress(raw) if gz else raw


def _write_mnist(root, name, gz=False):
    raw = os.path.join(root, name, "raw")
    os.makedirs(raw, exist_ok=True)
    rng = np.random.default_rng(1)
    arrays = {}
    for prefix, n in (("train", 4), ("t10k", 3)):
        imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, (n,), dtype=np.uint8)
        arrays[prefix] = (imgs, labels)
        ext = ".gz" if gz else ""
        with open(os.path.join(raw, f"{prefix}-images-idx3-ubyte{ext}"), "wb") as f:
            f.write(_idx(imgs, gz))
        with open(os.path.join(raw, f"{prefix}-labels-idx1-ubyte{ext}"), "wb") as f:
            f.write(_idx(labels, gz))
    return arrays


@pytest.mark.parametrize("cls_name", ["MNIST", "FashionMNIST"])
def test_mnist_reader_matches_torchvision(tmp_path, cls_name):
    tv = import_torchvision()
    arrays = _write_mnist(str(tmp_path), cls_name)
    for train in (True, False):
        ours = getattr(datasets, cls_name)(str(tmp_path), train=train)
        ref = getattr(tv.datasets, cls_name)(str(tmp_path), train=train)
        imgs, labels = arrays["train" if train else "t10k"]
        assert len(ours) == len(imgs)
        assert ours.data.dtype == ember.uint8 and ours.targets.dtype == ember.int64
        np.testing.assert_array_equal(ours.data.numpy(), imgs)
        np.testing.assert_array_equal(ours.targets.numpy(), labels)
        img, t = ours[1]
        rimg, rt = ref[1]
        assert img.mode == "L" and t == rt and isinstance(t, int)
        np.testing.assert_array_equal(np.asarray(img), np.asarray(rimg))
        assert ours.classes == ref.classes and ours.class_to_idx == ref.class_to_idx
        assert repr(ours) == repr(ref)


def test_mnist_gz_files_missing_files_and_download(tmp_path):
    arrays = _write_mnist(str(tmp_path), "MNIST", gz=True)
    ds = datasets.MNIST(str(tmp_path), train=False, transform=np.asarray)
    img, _ = ds[2]
    np.testing.assert_array_equal(img, arrays["t10k"][0][2])
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.FashionMNIST(str(tmp_path))
    with pytest.raises(RuntimeError, match="downloads nothing"):
        datasets.FashionMNIST(str(tmp_path), download=True)
    # files present: download=True is a no-op, as in torchvision
    assert len(datasets.MNIST(str(tmp_path), download=True)) == 4


def _write_cifar(root, hundred=False):
    rng = np.random.default_rng(2)
    folder = os.path.join(root, "cifar-100-python" if hundred else "cifar-10-batches-py")
    os.makedirs(folder)
    names = (["train"], ["test"]) if hundred else ([f"data_batch_{i}" for i in range(1, 6)], ["test_batch"])
    key = "fine_labels" if hundred else "labels"
    out = {}
    for split, files in zip(("train", "test"), names):
        datas, labels = [], []
        for fname in files:
            d = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
            lab = [int(v) for v in rng.integers(0, 10, 2)]
            with open(os.path.join(folder, fname), "wb") as f:
                pickle.dump({"data": d, key: lab, "batch_label": fname}, f)
            datas.append(d)
            labels += lab
        out[split] = (np.vstack(datas), labels)
    meta_name, meta_key = ("meta", "fine_label_names") if hundred else ("batches.meta", "label_names")
    classes = [f"class{i}" for i in range(10)]
    with open(os.path.join(folder, meta_name), "wb") as f:
        pickle.dump({meta_key: classes}, f)
    return out, classes


@pytest.mark.parametrize("hundred", [False, True])
def test_cifar_readers(tmp_path, hundred):
    out, classes = _write_cifar(str(tmp_path), hundred)
    cls = datasets.CIFAR100 if hundred else datasets.CIFAR10
    for train in (True, False):
        ds = cls(str(tmp_path), train=train, target_transform=lambda t: t * 10)
        data, labels = out["train" if train else "test"]
        assert len(ds) == len(labels) and ds.targets == labels
        assert ds.data.shape == (len(labels), 32, 32, 3)
        img, t = ds[1]
        assert isinstance(img, Image.Image) and img.mode == "RGB" and t == labels[1] * 10
        np.testing.assert_array_equal(np.asarray(img), data[1].reshape(3, 32, 32).transpose(1, 2, 0))
        assert ds.classes == classes and ds.class_to_idx["class3"] == 3
        assert repr(ds).splitlines()[3] == f"    Split: {'Train' if train else 'Test'}"
    with pytest.raises(RuntimeError, match="downloads nothing"):
        (datasets.CIFAR10 if hundred else datasets.CIFAR100)(str(tmp_path), download=True)
    with pytest.raises(RuntimeError, match="Dataset not found"):
        (datasets.CIFAR10 if hundred else datasets.CIFAR100)(str(tmp_path))


def test_dataloader_over_fakedata():
    ds = datasets.FakeData(size=6, image_size=(3, 4, 4), transform=lambda im: ember.from_numpy(
        np.asarray(im, dtype=np.float32).copy()))
    xs, ys = next(iter(ember.utils.data.DataLoader(ds, batch_size=3)))
    assert xs.shape == (3, 4, 4, 3) and ys.shape == (3,)


# ----------------------------------------------------------------------------- boxes

def _boxes(n, rng, scale=20.0):
    xy = rng.uniform(0, scale, (n, 2))
    wh = rng.uniform(0.5, scale / 2, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def test_box_ops_match_torchvision():
    tv = import_torchvision()
    rng = np.random.default_rng(0)
    a, b = _boxes(6, rng), _boxes(4, rng)
    for fn in ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"):
        got = getattr(ops, fn)(_e(a), _e(b)).numpy()
        want = getattr(tv.ops, fn)(_t(a), _t(b)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=fn)
    np.testing.assert_allclose(ops.box_area(_e(a)).numpy(), tv.ops.box_area(_t(a)).numpy(), rtol=1e-6)
    ai = (a * 3).astype(np.int64)
    assert ops.box_area(_e(ai)).dtype == ember.int64
    np.testing.assert_array_equal(ops.box_iou(_e(ai), _e(ai)).numpy(), tv.ops.box_iou(_t(ai), _t(ai)).numpy())
    for i in ("xyxy", "xywh", "cxcywh"):
        for o in ("xyxy", "xywh", "cxcywh"):
            np.testing.assert_allclose(ops.box_convert(_e(a), i, o).numpy(),
                                       tv.ops.box_convert(_t(a), i, o).numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError):
        ops.box_convert(_e(a), "xyxy", "nope")
    big = a * 2 - 5
    np.testing.assert_array_equal(ops.clip_boxes_to_image(_e(big), (17, 23)).numpy(),
                                  tv.ops.clip_boxes_to_image(_t(big), (17, 23)).numpy())
    np.testing.assert_array_equal(ops.remove_small_boxes(_e(a), 4.0).numpy(),
                                  tv.ops.remove_small_boxes(_t(a), 4.0).numpy())


def test_box_iou_differentiable():
    a = ember.tensor([[0.0, 0.0, 4.0, 4.0]], requires_grad=True)
    b = ember.tensor([[2.0, 2.0, 6.0, 6.0]])
    ops.generalized_box_iou(a, b).sum().backward()
    ta = torch.tensor([[0.0, 0.0, 4.0, 4.0]], requires_grad=True)
    tv = import_torchvision()
    tv.ops.generalized_box_iou(ta, torch.tensor([[2.0, 2.0, 6.0, 6.0]])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5)


def _nms_reference(boxes, scores, thr):
    """The CPU kernel's loops: order by score, suppress IoU > thr."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    area = [(b[2] - b[0]) * (b[3] - b[1]) for b in boxes]
    sup, keep = set(), []
    for p, i in enumerate(order):
        if i in sup:
            continue
        keep.append(i)
        for j in order[p + 1:]:
            w = max(0.0, min(boxes[i][2], boxes[j][2]) - max(boxes[i][0], boxes[j][0]))
            h = max(0.0, min(boxes[i][3], boxes[j][3]) - max(boxes[i][1], boxes[j][1]))
            inter = w * h
            if inter / (area[i] + area[j] - inter) > thr:
                sup.add(j)
    return keep


def test_nms_and_batched_nms():
    rng = np.random.default_rng(3)
    boxes = _boxes(40, rng, scale=10.0)
    scores = rng.permutation(40).astype(np.float32) / 40
    for thr in (0.1, 0.3, 0.7):
        keep = ops.nms(_e(boxes), _e(scores), thr)
        assert keep.dtype == ember.int64
        assert keep.tolist() == _nms_reference(boxes.astype(np.float64).tolist(), scores.tolist(), thr)
    idxs = rng.integers(0, 3, 40)
    keep = ops.batched_nms(_e(boxes), _e(scores), _e(idxs), 0.3).tolist()
    want = []
    for c in range(3):
        sel = np.nonzero(idxs == c)[0]
        want += [int(sel[k]) for k in _nms_reference(boxes[sel].astype(np.float64).tolist(),
                                                     scores[sel].tolist(), 0.3)]
    assert keep == sorted(want, key=lambda i: -scores[i])
    assert ops.nms(ember.zeros((0, 4)), ember.zeros(0), 0.5).shape == (0,)
    assert ops.batched_nms(ember.zeros((0, 4)), ember.zeros(0), ember.zeros(0, dtype=ember.int64), 0.5).shape == (0,)
    # torchvision's own kernel, where it loads
    tv = import_torchvision()
    try:
        want = tv.ops.nms(_t(boxes), _t(scores), 0.3).tolist()
    except (RuntimeError, NotImplementedError):
        return
    assert ops.nms(_e(boxes), _e(scores), 0.3).tolist() == want


# ----------------------------------------------------------------------------- RoI ops

def _roi_align_reference(x, rois, PH, PW, scale, sampling_ratio, aligned):
    """The C++ CPU kernel's loops (samples outside [-1, size] contribute zero)."""
    N, C, H, W = x.shape
    out = np.zeros((len(rois), C, PH, PW))

    def bilinear(img, y, xx):
        if y < -1.0 or y > H or xx < -1.0 or xx > W:
            return np.zeros(C)
        y, xx = max(y, 0.0), max(xx, 0.0)
        yl, xl = int(y), int(xx)
        if yl >= H - 1:
            yh = yl = H - 1
            y = float(yl)
        else:
            yh = yl + 1
        if xl >= W - 1:
            xh = xl = W - 1
            xx = float(xl)
        else:
            xh = xl + 1
        ly, lx = y - yl, xx - xl
        hy, hx = 1 - ly, 1 - lx
        return hy * hx * img[:, yl, xl] + hy * lx * img[:, yl, xh] + ly * hx * img[:, yh, xl] + ly * lx * img[:, yh, xh]

    off = 0.5 if aligned else 0.0
    for k, r in enumerate(rois.astype(np.float64)):
        sw, sh, ew, eh = (v * scale - off for v in r[1:])
        rw, rh = ew - sw, eh - sh
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / PH, rw / PW
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / PH)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / PW)
        cnt = max(gh * gw, 1)
        for ph in range(PH):
            for pw in range(PW):
                acc = np.zeros(C)
                for iy in range(gh):
                    y = sh + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        acc += bilinear(x[int(r[0])], y, sw + pw * bw + (ix + 0.5) * bw / gw)
                out[k, :, ph, pw] = acc / cnt
    return out


def _torchvision_roi_align(tv, *args):
    """torchvision's kernel where it loads; else its Python version, called eagerly (its
    lazy torch.compile takes tens of seconds). That version clamps instead of zeroing
    samples beyond the border, so it is only used on RoIs inside the image."""
    from torchvision.extension import _has_ops
    if _has_ops():
        return tv.ops.roi_align(*args), True
    fn = sys.modules["torchvision.ops.roi_align"]._roi_align
    for cell in fn.__closure__ or ():
        if callable(cell.cell_contents) and getattr(cell.cell_contents, "__name__", "") == "_roi_align":
            fn = cell.cell_contents
    x, rois, (ph, pw), scale, sr, aligned = args
    return fn(x, rois, scale, ph, pw, sr, aligned), False


ROIS = np.array([[0, 1.2, 0.5, 8.3, 9.1], [1, 3.0, 3.0, 3.5, 3.2], [0, 4.0, 2.0, 18.0, 20.0],
                 [1, 5.5, 1.0, 9.9, 6.0]], dtype=np.float32)
ROIS_OUTSIDE = np.array([[1, -2.0, 3.0, 4.0, 14.0], [1, 0.0, 0.0, 19.0, 23.0], [0, -9.0, -9.0, -1.0, 30.0]],
                        dtype=np.float32)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_roi_align(aligned, sampling_ratio):
    tv = import_torchvision()
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = np.concatenate([ROIS, ROIS_OUTSIDE])
    got = ops.roi_align(_e(x), _e(rois), (3, 4), spatial_scale=0.5, sampling_ratio=sampling_ratio, aligned=aligned)
    want = _roi_align_reference(x, rois, 3, 4, 0.5, sampling_ratio, aligned)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    # torchvision: values and the input gradient
    xe = ember.from_numpy(x.copy()).requires_grad_()
    xt = torch.from_numpy(x.copy()).requires_grad_()
    got = ops.roi_align(xe, _e(ROIS), (3, 4), 0.5, sampling_ratio, aligned)
    want, _ = _torchvision_roi_align(tv, xt, _t(ROIS), (3, 4), 0.5, sampling_ratio, aligned)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (got * _e(g)).sum().backward()
    (want * _t(g)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    # list-of-boxes form and the module
    lst = [_e(rois[rois[:, 0] == 0, 1:]), _e(rois[rois[:, 0] == 1, 1:])]
    m = ops.RoIAlign((3, 4), 0.5, sampling_ratio, aligned)
    out = m(ember.from_numpy(x), lst).numpy()
    order = np.concatenate([np.nonzero(rois[:, 0] == 0)[0], np.nonzero(rois[:, 0] == 1)[0]])
    np.testing.assert_allclose(out, _roi_align_reference(x, rois[order], 3, 4, 0.5, sampling_ratio, aligned),
                               rtol=1e-4, atol=1e-5)
    assert repr(m) == repr(tv.ops.RoIAlign((3, 4), 0.5, sampling_ratio, aligned))


def _roi_pool_reference(x, rois, ph_, pw_, scale):
    K, (N, C, H, W) = len(rois), x.shape
    out = np.zeros((K, C, ph_, pw_), np.float32)
    grad = np.zeros_like(x)  # gradient of out.sum(): 1 at each bin's first maximum

    def rnd(v):
        return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)
    for k, r in enumerate(rois):
        b = int(r[0])
        sw, sh, ew, eh = (rnd(float(v) * scale) for v in r[1:])
        rw, rh = max(ew - sw + 1, 1), max(eh - sh + 1, 1)
        bh, bw = rh / ph_, rw / pw_
        for c in range(C):
            for ph in range(ph_):
                for pw in range(pw_):
                    hs = min(max(math.floor(ph * bh) + sh, 0), H)
                    he = min(max(math.ceil((ph + 1) * bh) + sh, 0), H)
                    ws = min(max(math.floor(pw * bw) + sw, 0), W)
                    we = min(max(math.ceil((pw + 1) * bw) + sw, 0), W)
                    if he > hs and we > ws:
                        region = x[b, c, hs:he, ws:we]
                        out[k, c, ph, pw] = region.max()
                        i, j = np.unravel_index(region.argmax(), region.shape)
                        grad[b, c, hs + i, ws + j] += 1
    return out, grad


def test_roi_pool():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 9, 11)).astype(np.float32)
    rois = np.array([[0, 1.2, 0.5, 8.3, 7.1], [1, -2.0, 3.0, 4.0, 14.0], [0, 3.0, 3.0, 3.5, 3.2],
                     [1, 30.0, 30.0, 40.0, 40.0]], dtype=np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    got = ops.roi_pool(xe, _e(rois), (3, 2), spatial_scale=1.0)
    want, want_grad = _roi_pool_reference(x, rois, 3, 2, 1.0)
    np.testing.assert_array_equal(got.detach().numpy(), want)
    assert (want[3] == 0).all()  # a RoI outside the image pools to zeros
    got.sum().backward()
    np.testing.assert_array_equal(xe.grad.numpy(), want_grad)
    lst = [_e(rois[rois[:, 0] == 0, 1:]), _e(rois[rois[:, 0] == 1, 1:])]
    np.testing.assert_array_equal(ops.RoIPool(3, 1.0)(_e(x), lst).numpy()[[0, 2, 1, 3]].shape, (4, 2, 3, 3))
    assert repr(ops.RoIPool((3, 2), 0.5)) == "RoIPool(output_size=(3, 2), spatial_scale=0.5)"
    tv = import_torchvision()
    try:
        want = tv.ops.roi_pool(_t(x), _t(rois), (3, 2), 1.0).numpy()
    except (RuntimeError, NotImplementedError):
        return
    np.testing.assert_array_equal(got.detach().numpy(), want)


# ----------------------------------------------------------------------------- losses etc.

@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_sigmoid_focal_loss(reduction):
    tv = import_torchvision()
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y = (rng.random((5, 3)) > 0.5).astype(np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    xt = torch.from_numpy(x.copy()).requires_grad_()
    got = ops.sigmoid_focal_loss(xe, _e(y), reduction=reduction)
    want = tv.ops.sigmoid_focal_loss(xt, _t(y), reduction=reduction)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-7)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError):
        ops.sigmoid_focal_loss(xe, _e(y), reduction="bad")


def test_stochastic_depth():
    x = ember.ones(1000, 4)
    assert ops.stochastic_depth(x, 0.3, "row", training=False) is x
    y = ops.stochastic_depth(x, 0.25, "row").numpy()
    rows = y[:, 0]
    assert set(np.unique(rows)) <= {0.0, np.float32(1 / 0.75)}
    assert (y == y[:, :1]).all() and 0.65 < (rows > 0).mean() < 0.85
    b = ops.stochastic_depth(x, 0.5, "batch").numpy()
    assert len(np.unique(b)) == 1
    with pytest.raises(ValueError):
        ops.stochastic_depth(x, 1.5, "row")
    with pytest.raises(ValueError):
        ops.stochastic_depth(x, 0.5, "col")
    assert repr(ops.StochasticDepth(0.2, "row")) == "StochasticDepth(p=0.2, mode=row)"


def test_misc_blocks_match_torchvision_layout():
    tv = import_torchvision()
    e = ops.Conv2dNormActivation(3, 8, kernel_size=3, stride=2)
    r = tv.ops.Conv2dNormActivation(3, 8, kernel_size=3, stride=2)
    assert list(e.state_dict()) == list(r.state_dict())
    assert repr(e) == repr(r)
    f = ops.FrozenBatchNorm2d(4)
    rf = tv.ops.FrozenBatchNorm2d(4)
    assert list(f.state_dict()) == list(rf.state_dict())
    x = np.random.default_rng(0).standard_normal((2, 4, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(f(_e(x)).numpy(), rf(_t(x)).numpy(), rtol=1e-6)
