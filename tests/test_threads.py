"""ember.set_num_threads / get_num_threads (and the inter-op pair) like torch's."""
import subprocess
import sys

import pytest

import ember


def _run(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_set_num_threads_limits_blas_and_fft_workers():
    pytest.importorskip("threadpoolctl")
    out = _run("import ember, numpy, threadpoolctl\n"
               "from ember._kernels import fft_large\n"
               "ember.set_num_threads(1)\n"
               "info = threadpoolctl.threadpool_info()\n"
               "blas = [d['num_threads'] for d in info if d['user_api'] == 'blas']\n"
               "print(ember.get_num_threads(), fft_large.num_workers(), len(blas) >= 2, "
               "set(blas))")
    assert out == "1 1 True {1}"


def test_defaults_and_errors_like_torch():
    torch = pytest.importorskip("torch")
    assert ember.get_num_threads() >= 1 and ember.get_num_interop_threads() >= 1
    for arg, msg in ((0, "expects a positive integer"), (1.5, "expects an int, but got float")):
        for lib in (ember, torch):
            with pytest.raises(RuntimeError, match=msg):
                lib.set_num_threads(arg)


def test_interop_threads_set_once():
    out = _run("import ember\n"
               "ember.set_num_interop_threads(3)\n"
               "print(ember.get_num_interop_threads())\n"
               "try:\n    ember.set_num_interop_threads(2)\nexcept RuntimeError:\n"
               "    print('refused')")
    assert out.split() == ["3", "refused"]


def test_without_threadpoolctl_warns_naming_the_extra():
    out = _run("import sys, warnings\n"
               "sys.modules['threadpoolctl'] = None\n"
               "import ember\n"
               "with warnings.catch_warnings(record=True) as w:\n"
               "    warnings.simplefilter('always')\n"
               "    ember.set_num_threads(1)\n"
               "print(ember.get_num_threads(), 'ember[threads]' in str(w[0].message))")
    assert out == "1 True"
