"""``torchvision.models.segmentation``: FCN, DeepLabV3 and LR-ASPP with torchvision's module
names (state_dicts interchange); outputs are OrderedDicts with ``out`` (and ``aux``)."""
from .deeplabv3 import *  # noqa: F401,F403
from .fcn import *  # noqa: F401,F403
from .lraspp import *  # noqa: F401,F403
