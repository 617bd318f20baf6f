"""ember.distributions: parameterisable probability distributions and sampling functions
(torch.distributions). Parameters and samples are ember Tensors, so log_prob, entropy, kl and
reparameterised ``rsample`` draws are differentiable."""
from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .kl import kl_divergence, register_kl
from .transforms import *  # noqa: F401,F403

# discrete families
from .bernoulli import Bernoulli
from .binomial import Binomial
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .geometric import Geometric
from .multinomial import Multinomial
from .negative_binomial import NegativeBinomial
from .poisson import Poisson

# continuous univariate families
from .beta import Beta
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Chi2, Gamma
from .generalized_pareto import GeneralizedPareto
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .inverse_gamma import InverseGamma
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .log_normal import LogNormal
from .normal import Normal
from .pareto import Pareto
from .relaxed_bernoulli import RelaxedBernoulli
from .studentT import StudentT
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull

# multivariate families
from .dirichlet import Dirichlet
from .lkj_cholesky import LKJCholesky
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .relaxed_categorical import RelaxedOneHotCategorical
from .wishart import Wishart

# built from other distributions
from .independent import Independent
from .mixture_same_family import MixtureSameFamily
from .transformed_distribution import TransformedDistribution

# every Distribution class above, the registries' entry points, and the transforms
__all__ = sorted(name for name, value in list(globals().items())
                 if isinstance(value, type) and issubclass(value, Distribution))
__all__ += ["biject_to", "kl_divergence", "register_kl", "transform_to"]
__all__ += transforms.__all__
