"""torch.cuda on a build without CUDA, as a CPU-only torch answers: what a GPU-written
program calls unconditionally works (and reports nothing), what needs a device raises
torch's exception classes."""
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(lib)
        except AssertionError as e:                  # torch's "not compiled" class
            return ("AssertionError", str(e).split(" (")[0])
        except Exception as e:                       # noqa: BLE001 - compared below
            return (type(e).__name__, str(e))
    return ("ok", r)


CALLS = {
    "quiet": lambda lib: [lib.cuda.manual_seed(0), lib.cuda.manual_seed_all(0), lib.cuda.seed(),
                          lib.cuda.seed_all(), lib.cuda.empty_cache(),
                          lib.cuda.set_rng_state_all([])],
    "queries": lambda lib: [lib.cuda.is_available(), lib.cuda.device_count(),
                            lib.cuda.is_initialized(), lib.cuda.is_bf16_supported(),
                            lib.cuda.memory_allocated(), lib.cuda.max_memory_allocated(),
                            lib.cuda.memory_reserved(), lib.cuda.max_memory_reserved(),
                            lib.cuda.get_rng_state_all(), len(lib.cuda.default_generators)],
    "stream None": lambda lib: lib.cuda.stream(None).__enter__(),
    "synchronize": lambda lib: lib.cuda.synchronize(),
    "current_device": lambda lib: lib.cuda.current_device(),
    "get_device_name": lambda lib: lib.cuda.get_device_name(),
    "get_device_properties": lambda lib: lib.cuda.get_device_properties(0),
    "get_rng_state": lambda lib: lib.cuda.get_rng_state(),
    "mem_get_info": lambda lib: lib.cuda.mem_get_info(),
    "current_stream": lambda lib: lib.cuda.current_stream(),
    "cuda.init": lambda lib: lib.cuda.init(),
    "Event": lambda lib: lib.cuda.Event(enable_timing=True),
    "Stream": lambda lib: lib.cuda.Stream(),
    "CUDAGraph": lambda lib: lib.cuda.CUDAGraph(),
    "device ctx": lambda lib: lib.cuda.device(0).__enter__(),
    "nvtx": lambda lib: lib.cuda.nvtx.range_push("step"),
    "FloatTensor": lambda lib: lib.cuda.FloatTensor(2),
    "isinstance": lambda lib: isinstance(lib.ones(2), lib.cuda.FloatTensor),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_cuda_call_as_cpu_only_torch(name):
    assert _outcome(ember, CALLS[name]) == _outcome(torch, CALLS[name])
