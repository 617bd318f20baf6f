"""Installed on PYTHONPATH by ``python -m ember.run`` so that child interpreters (spawned
DataLoader workers, subprocesses) resolve ``import torch`` to ember too."""
import os as _os

if _os.environ.get("EMBER_TORCH_ALIAS"):
    try:
        from ember.run import install as _install
        _install(_os.environ.get("EMBER_TORCH_ALIAS_SCRIPT") or None)
    except Exception:   # noqa: BLE001 - never break interpreter start-up
        pass
