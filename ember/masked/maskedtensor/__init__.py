"""torch.masked.maskedtensor: the MaskedTensor class and its factories."""
from ember.masked.maskedtensor.core import MaskedTensor, is_masked_tensor  # noqa: F401
from ember.masked.maskedtensor.creation import as_masked_tensor, masked_tensor  # noqa: F401
