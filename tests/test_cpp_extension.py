"""torch.utils.cpp_extension: importable; every builder and loader says it cannot run."""
import pytest

from ember.utils import cpp_extension


@pytest.mark.parametrize("call", [
    lambda: cpp_extension.load("m", ["m.cpp"]),
    lambda: cpp_extension.load_inline("m", "int f() { return 1; }", functions=["f"]),
    lambda: cpp_extension.CppExtension("m", ["m.cpp"]),
    lambda: cpp_extension.CUDAExtension("m", ["m.cu"]),
    lambda: cpp_extension.BuildExtension.with_options(no_python_abi_suffix=True)(),
])
def test_builders_raise_not_implemented_naming_themselves(call):
    with pytest.raises(NotImplementedError, match=r"torch\.utils\.cpp_extension\.\w+: ember has no C\+\+"):
        call()


def test_setup_script_constants():
    assert cpp_extension.CUDA_HOME is None and cpp_extension.ROCM_HOME is None
    assert cpp_extension.include_paths() == [] and not cpp_extension.IS_HIP_EXTENSION
