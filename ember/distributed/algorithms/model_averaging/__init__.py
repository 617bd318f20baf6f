"""Model averaging (local SGD): ranks train on their own and average parameters
periodically (``averagers.PeriodicModelAverager``)."""
from ember.distributed.algorithms.model_averaging import averagers, utils  # noqa: F401
