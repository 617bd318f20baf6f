"""Run-time errors of scripted code: a ``raise`` becomes ``jit.Error`` and any other error
keeps its class, both with torch's "Traceback of TorchScript" naming the scripted lines
(found from the generated code's line map, Note in ``_codegen``)."""
from __future__ import annotations

from ember.jit._codegen import LINE_MAP, ScriptRaise


class Error(RuntimeError):
    """``torch.jit.Error``: an exception raised by scripted code."""


def _script_frames(tb):
    out = []
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        lm = LINE_MAP.get(fname)
        if lm is not None:
            src = lm.get(tb.tb_lineno)
            if src is not None:
                out.append(src)
        tb = tb.tb_next
    return out


def _message(frames, tail):
    body = "\n".join(s.traceback() for s in frames)
    return ("The following operation failed in the TorchScript interpreter.\n"
            f"Traceback of TorchScript (most recent call last):\n{body}\n{tail}\n")


def run(py, args):
    try:
        return py(*args)
    except ScriptRaise as e:
        frames = _script_frames(e.__traceback__)
        cls = e.cls_name
        if cls == "builtins.AssertionError":
            tail = f"RuntimeError: {e.msg}"
        else:
            tail = f"{cls}: {e.msg}"
        raise Error(_message(frames, tail)) from None
    except Exception as e:         # noqa: BLE001 - re-raised with the scripted traceback
        if getattr(e, "_ember_script_traced", False):
            raise
        frames = _script_frames(e.__traceback__)
        if not frames:
            raise
        # torch's interpreter reports every failing op as a RuntimeError (an eager
        # IndexError or TypeError too), the message ending "RuntimeError: <text>"
        text = _message(frames, f"RuntimeError: {e}")
        new = RuntimeError(text)
        new._ember_script_traced = True
        raise new.with_traceback(e.__traceback__) from None
