"""Compile-time errors of TorchScript, as ``torch.jit.frontend`` names them. Each carries
the source range it points at and prints it with torch's ``~~~~ <--- HERE`` underline."""
from __future__ import annotations


class FrontendError(RuntimeError):
    def __init__(self, msg, source=None):
        self.msg, self.source = msg, source
        super().__init__(self._text())

    def _text(self):
        if self.source is None:
            return self.msg
        return f"{self.msg}:\n{self.source.traceback_compile()}\n"


class NotSupportedError(FrontendError):
    """A Python construct TorchScript does not support (``try``, ``lambda``, ``global``...)."""


class UnsupportedNodeError(NotSupportedError):
    pass


class CompileError(RuntimeError):
    """A type or name error found while compiling (torch raises RuntimeError for these)."""
    def __init__(self, msg, source=None):
        self.msg, self.source = msg, source
        text = msg if source is None else f"\n{msg}:\n{source.traceback_compile()}\n"
        super().__init__(text)
