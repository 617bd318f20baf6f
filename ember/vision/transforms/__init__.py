"""torchvision.transforms (v1 API) for ember: classes here, functions in ``functional``."""
from . import functional
from .autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .autoaugment import __all__ as _aa_all
from .functional import InterpolationMode
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _t_all

__all__ = list(_t_all) + list(_aa_all) + ["functional"]
