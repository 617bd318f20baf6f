"""Note [stale kernel caches] (ember/_kernels/compiled/__init__.py): the numba caches of
the compiled modules are dropped together when any of their sources changes."""
import os

from ember._kernels import compiled


def _caches(d):
    return sorted(n for n in os.listdir(d / "__pycache__") if n.endswith((".nbi", ".nbc")))


def test_caches_are_dropped_when_any_source_changes(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.f-1.py311.nbi").write_text("old")
    compiled._drop_stale_caches(str(tmp_path))            # no stamp yet: dropped
    assert _caches(tmp_path) == []
    for n in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "b.g-3.py311.nbi"):
        (tmp_path / "__pycache__" / n).write_text("new")
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_text("bytecode")
    compiled._drop_stale_caches(str(tmp_path))            # nothing changed: kept
    assert len(_caches(tmp_path)) == 3
    (tmp_path / "b.py").write_text("y = 3  # edited\n")
    compiled._drop_stale_caches(str(tmp_path))            # b changed: a's go too
    assert _caches(tmp_path) == []
    assert (tmp_path / "__pycache__" / "a.cpython-311.pyc").exists()
