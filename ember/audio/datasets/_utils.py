"""Shared pieces of the dataset readers."""
import os

from ember.utils.data import Dataset


def no_download(name, path):
    """ember downloads nothing: say where the data set's files are expected."""
    raise RuntimeError(f"{name}: ember does not download data sets (download=True was given). "
                       f"Fetch and extract the archive yourself so that {path} exists, then "
                       f"construct {name} with download=False.")


def require_dir(name, path):
    if not os.path.isdir(path):
        raise RuntimeError(f"{name}: dataset not found at {path}. Please download and extract "
                           f"it there (ember does not download), or check `root`.")


def load_audio(path):
    from ember.audio import load
    return load(path)


__all__ = ["Dataset", "no_download", "require_dir", "load_audio"]
