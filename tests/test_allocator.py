"""ember's malloc tuning (Note [page faults] in ember/_allocator.py)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember  # noqa: F401  (importing ember applies the tuning)
from ember._allocator import tune_malloc

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")


@pytest.mark.parametrize("env", [{"EMBER_MALLOC_TUNING": "0"},
                                 {"MALLOC_TRIM_THRESHOLD_": "1000"},
                                 {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}])
def test_user_settings_are_left_alone(env):
    assert tune_malloc(env) is False


@linux
def test_tuning_applies_on_glibc():
    assert tune_malloc({}) is True


_REUSE = """
import resource, numpy as np, ember
n = (40 << 20) // 8                     # 40 MiB: above glibc's largest dynamic mmap threshold
a = np.ones(n)
del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
b = np.ones(n)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(tuning):
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_",
                                                             "MALLOC_TRIM_THRESHOLD_",
                                                             "GLIBC_TUNABLES")}
    env["EMBER_MALLOC_TUNING"] = tuning
    out = subprocess.run([sys.executable, "-c", _REUSE], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    return int(out.stdout.split()[-1])


@linux
def test_a_freed_large_block_is_reused_without_page_faults():
    tuned, untuned = _faults("1"), _faults("0")
    assert tuned < 50 and tuned < untuned, (tuned, untuned)
