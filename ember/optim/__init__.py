"""ember.optim: torch.optim on ember tensors."""
from ember.optim import lr_scheduler  # noqa: F401
from ember.optim._swap import swap_in_optimizer_params_and_state
from ember.optim.adadelta import Adadelta
from ember.optim.adafactor import Adafactor
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam
from ember.optim.adamax import Adamax
from ember.optim.adamw import AdamW
from ember.optim.asgd import ASGD
from ember.optim.lbfgs import LBFGS
from ember.optim.muon import Muon
from ember.optim.nadam import NAdam
from ember.optim.optimizer import Optimizer
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD
from ember.optim.sparse_adam import SparseAdam

__all__ = ["Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "LBFGS",
           "lr_scheduler", "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD",
           "SparseAdam", "swa_utils", "swap_in_optimizer_params_and_state"]


def __getattr__(name):
    # swa_utils needs ember.nn; import it on first use so `import ember` does not pull nn in
    if name == "swa_utils":
        import importlib
        return importlib.import_module("ember.optim.swa_utils")
    raise AttributeError(f"module 'ember.optim' has no attribute '{name}'")
