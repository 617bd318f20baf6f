"""torch._dynamo.config: the flags scripts set around ``torch.compile`` (recorded only:
ember's compile runs eagerly). Unknown names raise AttributeError, as torch's do."""
from ember._config_module import install

suppress_errors = False
verbose = False
cache_size_limit = 8
recompile_limit = 8
accumulated_cache_size_limit = 256
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
dynamic_shapes = True
specialize_int = False
optimize_ddp = True
inline_inbuilt_nn_modules = True
raise_on_ctx_manager_usage = True
guard_nn_modules = True
error_on_recompile = False
force_parameter_static_shapes = True
cache_size_limit_per_frame = 8

install(__name__)
