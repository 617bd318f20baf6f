"""argparse actions whose default comes from a ``PET_<DEST>`` environment variable."""
import argparse
import os

__all__ = ["env", "check_env"]


class env(argparse.Action):
    """``--foo-bar`` defaults to ``$PET_FOO_BAR`` (then to ``default``)."""

    def __init__(self, dest, default=None, required=False, **kwargs):
        value = os.environ.get(f"PET_{dest.upper()}", default)
        super().__init__(dest=dest, default=value, required=required and value is None,
                         **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


class check_env(argparse.Action):
    """A flag whose default is ``bool(int($PET_<DEST>))`` (``"0"`` unless set)."""

    def __init__(self, dest, default=False, **kwargs):
        value = bool(int(os.environ.get(f"PET_{dest.upper()}", "1" if default else "0")))
        super().__init__(dest=dest, const=True, default=value, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const)
