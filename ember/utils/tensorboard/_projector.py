"""Files for TensorBoard's embedding projector (``SummaryWriter.add_embedding``): under
``<log_dir>/<step:05d>/<tag>/`` the vectors (tensors.tsv), labels (metadata.tsv) and a
sprite of the label images (sprite.png), listed in ``<log_dir>/projector_config.pbtxt``."""
from __future__ import annotations

import math
import os

import numpy as np


def _dir_name(tag):
    """The tag as one path component (torch escapes the separators, lower-case hex)."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _metadata_lines(metadata, header):
    if header is None:
        return [str(m) for m in metadata]
    return ["\t".join(str(h) for h in header)] + \
        ["\t".join(str(v) for v in row) for row in metadata]


def _sprite(images):
    """(N, C, H, W) images, values taken as [0, 1] (x 255, clipped, truncated), tiled
    row-major ceil(sqrt(N)) per row with no padding, on a square black canvas as wide as
    the tiles; grey images become RGB."""
    n, c, h, w = images.shape
    if c == 1:
        images = np.repeat(images, 3, axis=1)
    per_row = int(math.ceil(math.sqrt(n)))
    rows = int(math.ceil(n / per_row))
    side = per_row * w
    canvas = np.zeros((max(side, rows * h), side, 3), np.uint8)
    pixels = np.clip(images.astype(np.float64) * 255, 0, 255).astype(np.uint8)
    for i in range(n):
        r, q = divmod(i, per_row)
        canvas[r * h:(r + 1) * h, q * w:(q + 1) * w] = pixels[i].transpose(1, 2, 0)
    return canvas


def _quoted(text):
    """A protobuf text-format string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _config_entry(name, folder, has_metadata, sprite_hw):
    lines = ["embeddings {", f"  tensor_name: {_quoted(name)}"]
    if has_metadata:
        lines.append(f"  metadata_path: {_quoted(folder + '/metadata.tsv')}")
    if sprite_hw is not None:
        lines += ["  sprite {", f"    image_path: {_quoted(folder + '/sprite.png')}",
                  f"    single_image_dim: {sprite_hw[1]}", f"    single_image_dim: {sprite_hw[0]}",
                  "  }"]
    lines += [f"  tensor_path: {_quoted(folder + '/tensors.tsv')}", "}"]
    return "\n".join(lines) + "\n"


def write_embedding(log_dir, entries, mat, metadata, label_img, global_step, tag,
                    metadata_header):
    """Write one embedding's files and rewrite the config with ``entries`` (the writer's
    list of config entries so far, extended here)."""
    from ember.utils.tensorboard.writer import _to_numpy
    mat = _to_numpy(mat)
    if mat.ndim != 2:
        raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
    step = 0 if global_step is None else int(global_step)
    folder = f"{step:05d}/{_dir_name(tag)}"
    path = os.path.join(log_dir, folder)
    if os.path.exists(path):
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    os.makedirs(path, exist_ok=True)
    if metadata is not None:
        if len(metadata) != mat.shape[0]:
            raise AssertionError("#labels should equal with #data points")
        _write_lines(os.path.join(path, "metadata.tsv"), _metadata_lines(metadata, metadata_header))
    sprite_hw = None
    if label_img is not None:
        imgs = _to_numpy(label_img)
        if imgs.ndim != 4 or imgs.shape[0] != mat.shape[0]:
            raise AssertionError("#images should equal with #data points")
        from PIL import Image
        Image.fromarray(_sprite(imgs)).save(os.path.join(path, "sprite.png"))
        sprite_hw = imgs.shape[2:]
    _write_lines(os.path.join(path, "tensors.tsv"),
                 ["\t".join(str(v) for v in row) for row in mat.tolist()])
    entries.append(_config_entry(f"{tag}:{step:05d}", folder, metadata is not None, sprite_hw))
    with open(os.path.join(log_dir, "projector_config.pbtxt"), "w") as f:
        f.write("".join(entries))


def pr_curve_summary(summary_pb2, tag, labels, predictions, num_thresholds=127, weights=None):
    """A "pr_curves" plugin summary: float32 (6, num_thresholds) rows TP, FP, TN, FN,
    precision, recall at thresholds i / (num_thresholds - 1); a prediction counts at every
    threshold up to its bucket floor(p * (num_thresholds - 1))."""
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2
    from tensorboard.plugins.pr_curve import plugin_data_pb2
    from ember.utils.tensorboard.writer import _to_numpy
    n = min(int(num_thresholds), 127)
    labels = _to_numpy(labels).astype(bool).reshape(-1)
    preds = np.clip(_to_numpy(predictions).astype(np.float64).reshape(-1), 0, 1)
    w = np.ones_like(preds) if weights is None else \
        _to_numpy(weights).astype(np.float64).reshape(-1)
    bucket = np.floor(preds * (n - 1)).astype(np.int64)
    tp_b = np.bincount(bucket, weights=w * labels, minlength=n)
    fp_b = np.bincount(bucket, weights=w * ~labels, minlength=n)
    tp = np.cumsum(tp_b[::-1])[::-1]            # predictions at or above each threshold
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    data = np.stack([tp, fp, tn, fn, precision, recall]).astype(np.float32)
    content = plugin_data_pb2.PrCurvePluginData(version=0, num_thresholds=n)
    smd = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
        plugin_name="pr_curves", content=content.SerializeToString()))
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in data.shape])
    tensor = tensor_pb2.TensorProto(dtype="DT_FLOAT", tensor_shape=shape,
                                    float_val=data.reshape(-1).tolist())
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, metadata=smd,
                                                               tensor=tensor)])
