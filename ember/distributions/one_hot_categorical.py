"""torch.distributions.one_hot_categorical (the families live with Categorical)."""
from ember.distributions.categorical import (OneHotCategorical,  # noqa: F401
                                             OneHotCategoricalStraightThrough)

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
