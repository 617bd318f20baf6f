"""The exporter's exceptions (torch.onnx.errors' names)."""
from __future__ import annotations


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter."""


class OnnxExporterWarning(UserWarning):
    """Warnings the ONNX exporter gives."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op has no symbolic function for the requested opset."""

    def __init__(self, name, version, supported_version):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version")
        else:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported")
        super().__init__(msg)


class SymbolicValueError(OnnxExporterError):
    """A symbolic function got a value it cannot convert (names the op and the value)."""
