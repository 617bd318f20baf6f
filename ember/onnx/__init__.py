"""``ember.onnx``: export models to ONNX through the ``onnx`` package (``pip install
ember[onnx]``; onnxruntime runs the files).

    export(model, args, "model.onnx", input_names=["x"], output_names=["y"],
           dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})

An eager module or function is traced (``ember.jit.trace``) with its parameters frozen into
initializers; a scripted module exports its graph, ``prim::If``/``prim::Loop`` as ONNX
``If``/``Loop``. Each IR node maps to ONNX nodes through a symbolic table
(``_symbolic_*``); ``register_custom_op_symbolic`` adds or overrides entries.
"""
from __future__ import annotations

import contextlib
import enum
import io
import os
import warnings

from ember.onnx._registry import register_custom_op_symbolic, unregister_custom_op_symbolic
from ember.onnx.errors import OnnxExporterError
from ember.onnx import errors  # noqa: F401

__all__ = ["export", "is_in_onnx_export", "register_custom_op_symbolic",
           "unregister_custom_op_symbolic", "TrainingMode", "OperatorExportTypes",
           "OnnxExporterError", "errors", "producer_name", "producer_version",
           "select_model_mode_for_export"]

producer_name = "ember"
producer_version = "0.1.0"
DEFAULT_OPSET = 20


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


_exporting = [False]


def is_in_onnx_export():
    """True while ``export`` runs (inside the traced model too)."""
    return _exporting[0]


def _onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("ember.onnx.export needs the 'onnx' package: "
                          "pip install ember[onnx] (or pip install onnx onnxruntime)") from e
    return onnx


@contextlib.contextmanager
def select_model_mode_for_export(model, mode):
    """Put ``model`` in eval (EVAL) or train (TRAINING) mode for the export; restore after."""
    from ember import nn
    if not isinstance(model, nn.Module) or mode == TrainingMode.PRESERVE:
        yield
        return
    was = model.training
    model.train(mode == TrainingMode.TRAINING)
    try:
        yield
    finally:
        model.train(was)


_LEGACY_EXPORT = (
    "You are using the legacy TorchScript-based ONNX export. Starting in PyTorch 2.9, the new "
    "torch.export-based ONNX exporter has become the default. Learn more about the new export "
    "logic: https://docs.pytorch.org/docs/stable/onnx_export.html. For exporting control "
    "flow: https://pytorch.org/tutorials/beginner/onnx/export_control_flow_model_to_onnx_"
    "tutorial.html")
_LEGACY_WARNED = set()


def _always_shown(frame):
    """Whether the filters in force show the legacy-export warning at ``frame``'s line
    every time (``simplefilter("always")``, ``-W always``)."""
    module = frame.f_globals.get("__name__", "")

    def matches(pattern, text):      # a compiled pattern, or a plain text matched whole
        return pattern is None or (pattern == text if isinstance(pattern, str)
                                   else pattern.match(text) is not None)
    for action, msg, cat, mod, lineno in warnings.filters:
        if issubclass(DeprecationWarning, cat) and matches(msg, _LEGACY_EXPORT) \
                and matches(mod, module) and lineno in (0, frame.f_lineno):
            return action == "always"
    return False


def export(model, args=(), f=None, export_params=True, verbose=False,
           training=TrainingMode.EVAL, input_names=None, output_names=None,
           operator_export_type=OperatorExportTypes.ONNX, opset_version=None,
           do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=False,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True,
           *, kwargs=None, dynamo=None, external_data=True, dynamic_shapes=None,
           custom_translation_table=None, report=False, optimize=True, verify=False,
           profile=False, dump_exported_program=False, artifacts_dir="."):
    """Export ``model`` run on ``args`` to the ONNX file ``f`` (a path or a binary file
    object); returns the ``onnx.ModelProto`` when ``f`` is None.

    dynamic_axes: {name: [axis, ...]} or {name: {axis: "dim_name"}} for inputs/outputs.
    opset_version: default 20 (as torch 2.13). training: TrainingMode (EVAL runs
    ``model.eval()`` for the export). keep_initializers_as_inputs lists the weights as
    graph inputs too."""
    if dynamo:
        raise NotImplementedError("ember.onnx.export(dynamo=True): ember has no torch.export/"
                                  "dynamo; use the TorchScript-based exporter (dynamo=False)")
    if dynamo is not None:
        # torch 2.13 defaults to its dynamo exporter and warns when a script asks for this
        # one (ember's only exporter, also taken when ``dynamo`` is not given); once per
        # calling line, as the default filters show it (the export's own ``catch_warnings``
        # would reset the caller's warning registry)
        import sys
        caller = sys._getframe(1)
        where = (caller.f_code.co_filename, caller.f_lineno)
        if where not in _LEGACY_WARNED or _always_shown(caller):
            _LEGACY_WARNED.add(where)
            warnings.warn(_LEGACY_EXPORT, DeprecationWarning, stacklevel=2)
    if operator_export_type != OperatorExportTypes.ONNX:
        raise NotImplementedError(f"ember.onnx.export: operator_export_type="
                                  f"{OperatorExportTypes(operator_export_type).name}")
    if export_modules_as_functions:
        raise NotImplementedError("ember.onnx.export: export_modules_as_functions")
    if dynamic_shapes is not None or custom_translation_table is not None:
        raise NotImplementedError("ember.onnx.export: dynamic_shapes and "
                                  "custom_translation_table belong to the dynamo exporter")
    onnx = _onnx()
    from ember.onnx._convert import build_model
    args, kw = _split_args(args, kwargs)
    if kw:
        raise NotImplementedError("ember.onnx.export: keyword arguments to the model")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    _exporting[0] = True
    try:
        with select_model_mode_for_export(model, training):
            proto = build_model(model, args, opset=opset, input_names=input_names,
                                output_names=output_names, dynamic_axes=dynamic_axes or {},
                                fold=do_constant_folding, export_params=export_params,
                                keep_initializers_as_inputs=keep_initializers_as_inputs,
                                custom_opsets=custom_opsets or {},
                                training=training == TrainingMode.TRAINING)
    finally:
        _exporting[0] = False
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is None:
        return proto
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"ember.onnx.export: f must be a path or a file object, got "
                        f"{type(f).__name__}")
    return None


def _split_args(args, kwargs):
    import ember
    if isinstance(args, ember.Tensor):
        args = (args,)
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kw = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kw.update(args[-1])
        args = args[:-1]
    return args, kw

