"""ember.futures against torch.futures: collect_all, wait_all, then, callbacks, errors."""
import pytest

import ember


@pytest.mark.parametrize("lib_name", ["ember", "torch"])
def test_futures_namespace(lib_name):
    lib = ember if lib_name == "ember" else pytest.importorskip("torch")
    assert lib.futures.Future is lib.jit.Future
    f1, f2 = lib.futures.Future(), lib.futures.Future()
    both = lib.futures.collect_all([f1, f2])
    assert not both.done()
    f1.set_result(1)
    f2.set_result(2)
    assert [f.value() for f in both.wait()] == [1, 2]
    assert lib.futures.wait_all([f1, f2]) == [1, 2]
    bad = lib.futures.Future()
    bad.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        lib.futures.wait_all([bad])
    seen = []
    f3 = lib.futures.Future()
    chained = f3.then(lambda f: f.value() + 1)
    f3.add_done_callback(lambda f: seen.append(f.value()))
    f3.set_result(3)
    assert chained.wait() == 4 and seen == [3]
