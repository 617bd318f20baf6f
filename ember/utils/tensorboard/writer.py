"""SummaryWriter: writes TensorBoard event files with tensorboard's own protobufs and
EventFileWriter. ``tensorboard`` is an optional extra, imported only when a writer is made;
image encoding needs Pillow (the ``images`` extra)."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np

__all__ = ["SummaryWriter"]

_TB_HINT = "pip install 'ember[tensorboard]'"


def _tb():
    try:
        import tensorboard  # noqa: F401
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError(
            "ember.utils.tensorboard needs the 'tensorboard' package: "
            f"{_TB_HINT}") from e
    return event_pb2, summary_pb2, EventFileWriter


def _to_numpy(x):
    """ember tensor / NumPy array / Python number / sequence -> ndarray."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach().numpy()
    a = np.asarray(x)
    if a.dtype.kind == "V" or a.dtype.name in ("bfloat16",) or a.dtype.kind == "f" and a.dtype.itemsize < 4:
        a = a.astype(np.float32)
    return a


def _scalar(x) -> float:
    a = _to_numpy(x)
    if a.size != 1:
        raise ValueError(f"scalar value must have exactly one element, got shape {a.shape}")
    return float(a.reshape(()))


# ---------------------------------------------------------------- summaries (protobufs)

def _tf_bucket_limits():
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos = np.array(pos)
    return np.concatenate([-pos[::-1], [0.0], pos])


def _histogram_summary(summary_pb2, tag, values, bins, max_bins=None):
    a = _to_numpy(values).astype(np.float64).ravel()
    if a.size == 0:
        raise ValueError("the histogram is empty, please file a bug report")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = _tf_bucket_limits()
    counts, limits = np.histogram(a, bins=bins)
    # trim empty buckets at both ends; like torch, lead with an empty bucket whose
    # right limit is the first occupied bucket's left edge (so the range is recorded)
    nz = np.nonzero(counts)[0]
    start, end = (int(nz[0]), int(nz[-1]) + 1) if nz.size else (0, len(counts))
    counts = np.concatenate([[0], counts[start:end]])
    limits = limits[start:end + 1]
    from tensorboard.compat.proto.summary_pb2 import HistogramProto
    hist = HistogramProto(
        min=float(a.min()), max=float(a.max()), num=int(a.size),
        sum=float(a.sum()), sum_squares=float(a.dot(a)),
        bucket_limit=[float(x) for x in limits],
        bucket=[float(c) for c in counts])
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, histo=hist)])


def _to_hwc(a, dataformats):
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or a.ndim != len(fmt) or set(fmt) - set("NCHW"):
        raise ValueError(
            f"dataformats {dataformats!r} does not match an image of shape {a.shape}")
    if "N" in fmt:
        a = np.transpose(a, [fmt.index(c) for c in "NCHW" if c in fmt])
        if "C" not in fmt:
            a = a[:, None]
        return _make_grid(a)          # NCHW -> HWC grid
    if "C" not in fmt:                # HW
        a = np.transpose(a, [fmt.index("H"), fmt.index("W")])
        return np.stack([a, a, a], axis=2)
    a = np.transpose(a, [fmt.index("H"), fmt.index("W"), fmt.index("C")])
    if a.shape[2] == 1:
        a = np.concatenate([a, a, a], axis=2)
    return a


def _make_grid(a, ncols=8):
    """NCHW batch -> one HWC image, tiled ncols wide (torch's make_grid for add_images)."""
    if a.shape[1] == 1:
        a = np.concatenate([a, a, a], axis=1)
    n, c, h, w = a.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(n / ncols))
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=a.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = a[i]
    return np.transpose(canvas, (1, 2, 0))


def _image_summary(summary_pb2, tag, img, dataformats):
    a = _to_numpy(img)
    hwc = _to_hwc(a, dataformats)
    if a.dtype == np.uint8:
        u8 = hwc.astype(np.uint8)
    else:  # float images are in [0, 1]: scaled by 255, truncated (as torch)
        u8 = np.clip(hwc.astype(np.float32) * np.float32(255), 0, 255).astype(np.uint8)
    h, w, c = u8.shape
    if c not in (3, 4):
        raise ValueError(f"images need 1, 3 or 4 channels, got {c}")
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("encoding images for TensorBoard needs Pillow: "
                          "pip install 'ember[images]'") from e
    import io
    buf = io.BytesIO()
    Image.fromarray(u8, mode=None).save(buf, format="PNG")
    image = summary_pb2.Summary.Image(height=h, width=w, colorspace=c,
                                      encoded_image_string=buf.getvalue())
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=image)])


def _text_summary(summary_pb2, tag, text):
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2
    from tensorboard.plugins.text import plugin_data_pb2
    plugin = summary_pb2.SummaryMetadata.PluginData(
        plugin_name="text", content=plugin_data_pb2.TextPluginData(version=0).SerializeToString())
    smd = summary_pb2.SummaryMetadata(plugin_data=plugin)
    one = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)])
    tensor = tensor_pb2.TensorProto(dtype="DT_STRING", tensor_shape=one,
                                    string_val=[str(text).encode("utf8")])
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(
        tag=tag + "/text_summary", metadata=smd, tensor=tensor)])


def _hparams_summaries(summary_pb2, hparam_dict, metric_dict, hparam_domain_discrete):
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import api_pb2, metadata
    from tensorboard.plugins.hparams import plugin_data_pb2 as hp_pd

    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("hparam_dict and metric_dict should be dictionaries")
    hparam_domain_discrete = hparam_domain_discrete or {}
    for k, v in hparam_domain_discrete.items():
        fits = k in hparam_dict and isinstance(v, list) and \
            all(isinstance(d, type(hparam_dict[k])) for d in v)
        if not fits:
            raise TypeError(f"parameter {k!r}: hparam_domain_discrete must list values "
                            "of the hparam's type")

    ssi = hp_pd.SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if hasattr(v, "detach") or isinstance(v, np.ndarray) or isinstance(v, np.generic):
            v = _to_numpy(v).reshape(()).item()
        if isinstance(v, bool):
            ssi.hparams[k].bool_value = v
            dt = api_pb2.DATA_TYPE_BOOL
        elif isinstance(v, (int, float)):
            ssi.hparams[k].number_value = float(v)
            dt = api_pb2.DATA_TYPE_FLOAT64
        elif isinstance(v, str):
            ssi.hparams[k].string_value = v
            dt = api_pb2.DATA_TYPE_STRING
        else:
            raise ValueError(f"value of hparam {k!r} must be bool, int, float, str "
                             f"or a one-element tensor, got {type(v).__name__}")
        info = api_pb2.HParamInfo(name=k, type=dt)
        if k in hparam_domain_discrete:
            lv = struct_pb2.ListValue()
            for d in hparam_domain_discrete[k]:
                if isinstance(d, bool):
                    lv.values.add(bool_value=d)
                elif isinstance(d, (int, float)):
                    lv.values.add(number_value=float(d))
                else:
                    lv.values.add(string_value=str(d))
            info.domain_discrete.CopyFrom(lv)
        infos.append(info)

    metric_infos = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict]
    exp = api_pb2.Experiment(hparam_infos=infos, metric_infos=metric_infos)

    def summ(tag, plugin_data):
        smd = metadata.create_summary_metadata(plugin_data)
        return summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=tag, metadata=smd, tensor=metadata.NULL_TENSOR)])

    return (summ(metadata.EXPERIMENT_TAG, hp_pd.HParamsPluginData(experiment=exp)),
            summ(metadata.SESSION_START_INFO_TAG,
                 hp_pd.HParamsPluginData(session_start_info=ssi)),
            summ(metadata.SESSION_END_INFO_TAG, hp_pd.HParamsPluginData(
                session_end_info=hp_pd.SessionEndInfo(status=api_pb2.STATUS_SUCCESS))))


# ---------------------------------------------------------------- writers

class FileWriter:
    """One event file in one directory (torch's FileWriter)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self._event_pb2, self._summary_pb2, events_class = _tb()
        self.event_writer = events_class(str(log_dir), max_queue, flush_secs, filename_suffix)

    def add_summary(self, summary, global_step=None, walltime=None):
        """Wrap a ``Summary`` in an event."""
        self.add_event(self._event_pb2.Event(summary=summary), global_step, walltime)

    def add_event(self, event, step=None, walltime=None):
        """Stamp ``event`` with the wall time (now unless given) and step, then queue it."""
        event.wall_time = float(walltime) if walltime is not None else time.time()
        event.step = event.step if step is None else int(step)
        self.event_writer.add_event(event)

    # the event file's directory and lifecycle
    def get_logdir(self):
        return self.event_writer.get_logdir()

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


class SummaryWriter:
    """Writes entries straight to event files in ``log_dir`` for TensorBoard to read
    (torch.utils.tensorboard.SummaryWriter)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        _tb()  # fail early, naming the extra, when tensorboard is missing
        if not log_dir:    # runs/<month><day>_<hh>-<mm>-<ss>_<host><comment>
            stamp = f"{datetime.now():%b%d_%H-%M-%S}"
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        vars(self).update(log_dir=str(log_dir), purge_step=purge_step, max_queue=max_queue,
                          flush_secs=flush_secs, filename_suffix=filename_suffix,
                          file_writer=None, all_writers=None)
        self._get_file_writer()
        self.default_bins = _tf_bucket_limits()

    def _new_file_writer(self, log_dir):
        return FileWriter(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self):
        """The main event file, (re)opened on first use after ``close``. A pending
        ``purge_step`` is written first: TensorBoard then drops the later events of
        an earlier run in this directory."""
        if self.file_writer is not None and self.all_writers is not None:
            return self.file_writer
        main = self.file_writer = self._new_file_writer(self.log_dir)
        self.all_writers = {main.get_logdir(): main}
        if self.purge_step is not None:
            pb = main._event_pb2
            restart = pb.SessionLog(status=pb.SessionLog.START)
            for event in (pb.Event(step=self.purge_step, file_version="brain.Event:2"),
                          pb.Event(step=self.purge_step, session_log=restart)):
                main.add_event(event)
            self.purge_step = None
        return main

    def get_logdir(self):
        return self.log_dir

    def _write(self, summary, step, walltime):
        self._get_file_writer().add_summary(summary, step, walltime)

    @property
    def _summary_pb2(self):
        return self._get_file_writer()._summary_pb2

    # -- scalars
    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None,
                   new_style=False, double_precision=False):
        s = self._summary_pb2
        entry = s.Summary.Value(tag=tag, simple_value=_scalar(scalar_value))
        summary = s.Summary(value=[entry])
        self._write(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """One event file per entry, in ``<log_dir>/<main_tag>_<tag>`` (slashes of the main
        tag become underscores), each holding ``main_tag``: TensorBoard overlays them."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        prefix = main_tag.replace("/", "_")
        s = self._summary_pb2
        for tag, value in tag_scalar_dict.items():
            where = f"{root}/{prefix}_{tag}"
            if where not in self.all_writers:
                self.all_writers[where] = self._new_file_writer(where)
            entry = s.Summary.Value(tag=main_tag, simple_value=_scalar(value))
            self.all_writers[where].add_summary(s.Summary(value=[entry]), global_step, walltime)

    # -- histograms
    def add_histogram(self, tag, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None):
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        summary = _histogram_summary(self._summary_pb2, tag, values, bins, max_bins)
        self._write(summary, global_step, walltime)

    # -- images
    def add_image(self, tag, img_tensor, global_step=None, walltime=None,
                  dataformats="CHW"):
        summary = _image_summary(self._summary_pb2, tag, img_tensor, dataformats)
        self._write(summary, global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW"):
        if "N" not in dataformats.upper():
            raise ValueError(f"add_images needs an 'N' in dataformats, got {dataformats!r}")
        summary = _image_summary(self._summary_pb2, tag, img_tensor, dataformats)
        self._write(summary, global_step, walltime)

    # -- text
    def add_text(self, tag, text_string, global_step=None, walltime=None):
        summary = _text_summary(self._summary_pb2, tag, text_string)
        self._write(summary, global_step, walltime)

    # -- hparams
    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None):
        exp, ssi, sei = _hparams_summaries(self._summary_pb2, hparam_dict, metric_dict,
                                           hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run:
            for summary in (exp, ssi, sei):
                run._get_file_writer().add_summary(summary)
            for name, value in metric_dict.items():
                run.add_scalar(name, value, global_step)

    # -- embeddings (projector)
    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None):
        """``mat`` (N, D) with optional labels (N strings, or rows under
        ``metadata_header``) and label images (N, C, H, W) for the embedding projector."""
        from ember.utils.tensorboard._projector import write_embedding
        log_dir = self._get_file_writer().get_logdir()
        entries = vars(self).setdefault("_projector_entries", [])
        write_embedding(log_dir, entries, mat, metadata, label_img, global_step, tag,
                        metadata_header)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        """Precision-recall curve of 0/1 ``labels`` against ``predictions`` in [0, 1]."""
        from ember.utils.tensorboard._projector import pr_curve_summary
        summary = pr_curve_summary(self._summary_pb2, tag, labels, predictions,
                                   num_thresholds, weights)
        self._write(summary, global_step, walltime)

    # -- graph
    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Run ``model`` once on ``input_to_model`` (a tensor or a tuple of tensors), in
        eval mode, recording every op, and write the graph (a ``GraphDef``) plus run
        metadata (tag ``step1``) for TensorBoard's Graphs tab. ``verbose`` prints the
        recorded nodes. ``use_strict_trace`` is accepted for torch compatibility; the
        op-recording tracer has no strict mode."""
        from ._graph import trace_model
        trace = trace_model(model, input_to_model)
        if verbose:
            print(trace)
        graph_def, run_metadata = trace.to_protos()
        fw = self._get_file_writer()
        event_pb2 = fw._event_pb2
        fw.add_event(event_pb2.Event(graph_def=graph_def.SerializeToString()))
        fw.add_event(event_pb2.Event(tagged_run_metadata=event_pb2.TaggedRunMetadata(
            tag="step1", run_metadata=run_metadata.SerializeToString())))

    # -- lifecycle
    def flush(self):
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        """Flush and close every event file; a later write opens a new main file."""
        writers = self.all_writers or {}
        self.file_writer = self.all_writers = None
        for writer in writers.values():
            writer.flush()
            writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
