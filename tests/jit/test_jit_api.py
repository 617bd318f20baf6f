"""jit's settings API against torch: fusion strategy, oneDNN fusion flag, strict_fusion,
fuser names, the interface decorator."""
import warnings

import pytest

import ember


@pytest.mark.parametrize("lib_name", ["ember", "torch"])
def test_fusion_settings(lib_name):
    lib = ember if lib_name == "ember" else pytest.importorskip("torch")
    warnings.simplefilter("ignore")
    first = lib.jit.set_fusion_strategy([("DYNAMIC", 3)])
    assert lib.jit.set_fusion_strategy(first) == [("DYNAMIC", 3)]
    with pytest.raises(ValueError, match="only supported 'STATIC' or 'DYNAMIC'"):
        lib.jit.set_fusion_strategy([("EAGER", 1)])
    assert lib.jit.onednn_fusion_enabled() is False
    lib.jit.enable_onednn_fusion(True)
    assert lib.jit.onednn_fusion_enabled() is True
    lib.jit.enable_onednn_fusion(False)
    with lib.jit.strict_fusion():
        pass
    with lib.jit.fuser("fuser1"):
        pass

    @lib.jit.interface
    class Iface(lib.nn.Module):
        def forward(self, x: lib.Tensor) -> lib.Tensor:
            pass
    assert isinstance(Iface, type)
