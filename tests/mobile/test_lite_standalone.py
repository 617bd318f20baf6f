"""The lite runtime is a package of its own: ``import ember_lite`` imports nothing from
ember (checked in a subprocess where importing ember fails); ``ember.lite`` re-exports it."""
import os
import subprocess
import sys

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_ember_lite_imports_without_ember():
    code = ("import sys; sys.modules['ember'] = None\n"
            "import ember_lite\n"
            "assert not [m for m in sys.modules if m == 'ember' or m.startswith('ember.')\n"
            "            if sys.modules[m] is not None]\n"
            "print(len(ember_lite.KERNELS))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) > 100


def test_ember_lite_is_ember_dot_lite():
    import ember_lite
    assert ember.lite.load is ember_lite.load and ember.lite.KERNELS is ember_lite.KERNELS
