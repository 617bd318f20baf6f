"""torch.hub: load models from a local directory holding ``hubconf.py``.

ember downloads nothing: GitHub sources and URLs raise a clear ``RuntimeError``.
``load_state_dict_from_url`` still works when the file is already in the hub cache
(``get_dir()/checkpoints/<file name>``), e.g. put there by a PyTorch install on this machine.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
import warnings
from urllib.parse import urlparse

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

_hub_dir = None

_NO_DOWNLOAD = ("ember downloads nothing: {what} is not available offline. Clone the "
                "repository and use torch.hub.load(<local dir>, <model>, source='local'), "
                "or place the file in the hub cache ({cache}).")


def _get_torch_home():
    """$TORCH_HOME, else $XDG_CACHE_HOME/torch (default ~/.cache/torch)."""
    home = os.getenv(ENV_TORCH_HOME)
    if home is None:
        home = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")
    return os.path.expanduser(home)


def get_dir():
    """The hub cache directory: ``set_dir``'s value, else ``$TORCH_HOME/hub`` (default
    ``~/.cache/torch/hub``), the same place PyTorch uses."""
    return os.path.join(_get_torch_home(), "hub") if _hub_dir is None else _hub_dir


def set_dir(d):
    """Set the hub cache directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _check_source(source):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    return source


def _load_hubconf(repo_or_dir, source, what):
    if source == "github":
        raise RuntimeError(_NO_DOWNLOAD.format(what=f"GitHub repository {repo_or_dir!r}",
                                               cache=get_dir()))
    path = os.path.join(os.fspath(repo_or_dir), MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file or directory: {path!r}")
    repo_dir = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, repo_dir)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        try:
            sys.path.remove(repo_dir)
        except ValueError:
            pass
    deps = getattr(module, VAR_DEPENDENCY, None)
    if deps is not None:
        missing = [d for d in deps if importlib.util.find_spec(d) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entrypoint(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True,
         source="github"):
    """Names of the callable entrypoints in ``hubconf.py`` (``source='local'``: ``github``
    is a local directory; an ember extension, torch's ``list`` reads GitHub only)."""
    module = _load_hubconf(github, _check_source(source), "hub.list")
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None,
         source="github"):
    """The docstring of entrypoint ``model``."""
    module = _load_hubconf(github, _check_source(source), "hub.help")
    return _entrypoint(module, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call entrypoint ``model`` of ``repo_or_dir``'s ``hubconf.py`` with ``*args`` and
    ``**kwargs``. Only ``source='local'`` works (ember downloads nothing)."""
    source = _check_source(source)
    module = _load_hubconf(repo_or_dir, source, "hub.load")
    return _entrypoint(module, model)(*args, **kwargs)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Not supported: ember downloads nothing."""
    raise RuntimeError(_NO_DOWNLOAD.format(what=f"URL {url!r}", cache=get_dir()))


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Load a serialized object cached at ``<model_dir or get_dir()/checkpoints>/<file
    name>`` (the URL path's base name unless ``file_name``) with ``ember.load``; a file not
    in the cache raises ``RuntimeError`` since ember downloads nothing."""
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead")
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    filename = file_name or os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        raise RuntimeError(_NO_DOWNLOAD.format(what=f"URL {url!r}",
                                               cache=cached_file))
    import ember
    return ember.load(cached_file, map_location=map_location, weights_only=weights_only)
