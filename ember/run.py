"""Run an unmodified PyTorch script on ember: ``python -m ember.run script.py [args...]``.

A ``sys.meta_path`` finder aliases ``torch`` -> ``ember``, ``torch.X.Y`` -> ``ember.X.Y``,
``functorch`` -> ``ember.func`` and ``torchvision`` -> ``ember.vision``. The script runs as
``__main__`` with ``sys.argv = [script, *args]``. Child interpreters (spawned DataLoader
workers, subprocesses) get the same aliasing: ``EMBER_TORCH_ALIAS=1`` is set and a directory
holding a ``sitecustomize.py`` that installs the finder is put first on ``PYTHONPATH``.
An import of a torch module that ember lacks raises ``ModuleNotFoundError`` naming it.

``python -m ember.run -m package.module [args...]`` runs a module instead of a file
(``-m torch.distributed.run`` runs ``ember.distributed.run``).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

__all__ = ["install", "uninstall", "main"]

_ALIASES = (("torchvision", "ember.vision"), ("torchaudio", "ember.audio"), ("functorch", "ember.func"),
            ("torchdata", "ember.data"), ("torch", "ember"))
_SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_run_shim")


def _target(fullname):
    for src, dst in _ALIASES:
        if fullname == src or fullname.startswith(src + "."):
            return dst + fullname[len(src):]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target, needed_by):
        self.target = target
        self.needed_by = needed_by

    def create_module(self, spec):
        try:
            module = importlib.import_module(self.target)
        except ModuleNotFoundError as e:
            missing = e.name or ""
            if missing == self.target or self.target.startswith(missing + ".") and \
                    missing.startswith("ember"):
                by = f" (needed by {self.needed_by})" if self.needed_by else ""
                raise ModuleNotFoundError(f"ember does not provide {spec.name}{by}",
                                          name=spec.name) from None
            raise
        if spec.name == "torch":
            _torch_names()
        return module

    def exec_module(self, module):
        pass


# Note [torch's class names]: a script run as torch prints ``type(x)`` as torch does:
# "<class 'torch.Tensor'>", not "<class 'ember._tensor.Tensor'>". Only the classes a
# program meets by name are renamed, and only while torch is ember (a pickle naming
# ``torch.Tensor`` then resolves through the alias to ember's class).
_TORCH_NAMES = (("ember._tensor", "Tensor", "torch"), ("ember._tensor", "Size", "torch"),
                ("ember._dtype", "dtype", "torch"), ("ember._device", "device", "torch"),
                ("ember.nn.parameter", "Parameter", "torch.nn.parameter"),
                ("ember.masked.maskedtensor.core", "MaskedTensor",
                 "torch.masked.maskedtensor.core"))


def _torch_names():
    for module, name, torch_module in _TORCH_NAMES:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type):
            cls.__module__ = torch_module


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves torch / functorch / torchvision imports to ember modules."""

    def __init__(self, needed_by=None):
        self.needed_by = needed_by

    def find_spec(self, fullname, path=None, target=None):
        t = _target(fullname)
        if t is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(t, self.needed_by))


def install(needed_by=None):
    """Put the aliasing finder first on ``sys.meta_path`` (idempotent); returns it."""
    for f in sys.meta_path:
        if isinstance(f, TorchAliasFinder):
            if needed_by:
                f.needed_by = needed_by
            return f
    for name in list(sys.modules):     # a real torch imported earlier must not leak through
        if _target(name) is not None and not getattr(sys.modules[name], "__name__",
                                                     "").startswith("ember"):
            del sys.modules[name]
    finder = TorchAliasFinder(needed_by)
    sys.meta_path.insert(0, finder)
    return finder


def uninstall():
    """Remove the finder and the aliased entries of ``sys.modules``."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TorchAliasFinder)]
    for name in list(sys.modules):
        if _target(name) is not None and getattr(sys.modules[name], "__name__",
                                                 "").startswith("ember"):
            del sys.modules[name]


def _set_child_env(needed_by):
    os.environ["EMBER_TORCH_ALIAS"] = "1"
    if needed_by:
        os.environ["EMBER_TORCH_ALIAS_SCRIPT"] = needed_by
    pp = os.environ.get("PYTHONPATH", "")
    parts = [p for p in pp.split(os.pathsep) if p]
    if _SHIM not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([_SHIM] + parts)


_USAGE = "usage: python -m ember.run script.py [args...] | -m module [args...]"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        mod = argv[1]
        _set_child_env(mod)
        install(mod)
        sys.argv = [mod] + argv[2:]
        runpy.run_module(_target(mod) or mod, run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        print(f"ember.run: can't open file {script!r}: No such file or directory",
              file=sys.stderr)
        return 2
    name = os.path.basename(script)
    _set_child_env(name)
    install(name)
    sys.argv = [script] + argv[1:]
    sys.path[0:0] = [os.path.dirname(os.path.abspath(script))]
    try:
        # (an absolute path, as Python gives a script's __file__ and traceback lines)
        runpy.run_path(os.path.abspath(script), run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:  # noqa: BLE001 - reported as Python would, then exit 1
        _report_uncaught(e, script)
        return 1
    return 0


def _report_uncaught(e, script):
    """The script's uncaught exception through ``sys.excepthook`` with the traceback torch's
    would show: from the script's own frame (runpy's and this module's left out) to the
    last frame outside ember (torch's C++ ops have no Python frames below the caller's).
    ``EMBER_FULL_TRACEBACK=1`` keeps ember's frames."""
    tb, path = e.__traceback__, os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    if tb is None:
        tb = e.__traceback__
    elif not os.environ.get("EMBER_FULL_TRACEBACK"):
        here = os.path.dirname(os.path.abspath(__file__))
        last, t = tb, tb
        while t is not None:
            name = t.tb_frame.f_code.co_filename
            if not (name.startswith(here) or name.startswith("<ember")):
                last = t
            t = t.tb_next
        last.tb_next = None
    sys.excepthook(type(e), e.with_traceback(tb), tb)


if __name__ == "__main__":
    sys.exit(main())
