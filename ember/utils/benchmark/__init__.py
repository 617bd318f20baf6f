"""torch.utils.benchmark: Timer, Measurement and Compare."""
from ember.utils.benchmark.utils.common import *  # noqa: F401,F403
from ember.utils.benchmark.utils.common import (Measurement, TaskSpec, select_unit,  # noqa: F401
                                                unit_to_english, trim_sigfig)
from ember.utils.benchmark.utils.compare import Colorize, Compare  # noqa: F401
from ember.utils.benchmark.utils.timer import Language, Timer, timer  # noqa: F401
from ember.utils.benchmark.utils.fuzzer import (Fuzzer, FuzzedParameter,  # noqa: F401
                                                FuzzedTensor, ParameterAlias)
