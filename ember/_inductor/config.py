"""torch._inductor.config: code-generation flags (recorded only: ember's compile runs
eagerly). Unknown names raise AttributeError, as torch's do."""
from ember._config_module import Section, install

max_autotune = False
max_autotune_gemm = False
max_autotune_pointwise = False
coordinate_descent_tuning = False
freezing = False
fallback_random = False
epilogue_fusion = True
shape_padding = True
benchmark_kernel = False
debug = False
permute_fusion = False
aggressive_fusion = False
conv_1x1_as_mm = False
split_reductions = True
compile_threads = 1
fx_graph_cache = True
autotune_in_subproc = False
layout_optimization = True
emulate_precision_casts = False
cpp_wrapper = False
size_asserts = True
implicit_fallbacks = True
unroll_reductions_threshold = 8
force_fuse_int_mm_with_mul = False
use_mixed_mm = True

triton = Section(__name__ + ".triton", cudagraphs=False, cudagraph_trees=True,
                 unique_kernel_names=True, descriptive_names="original_aten",
                 persistent_reductions=True, multi_kernel=0)
cpp = Section(__name__ + ".cpp", threads=-1, simdlen=None, enable_kernel_profile=False,
              weight_prepack=True, dynamic_threads=False, vec_isa_ok=None)

install(__name__)
