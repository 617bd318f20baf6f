"""``torch.utils.model_zoo``: the old home of ``load_url`` (``torch.hub.load_state_dict_from_url``)."""
from ember.hub import load_state_dict_from_url as load_url  # noqa: F401

__all__ = ["load_url"]
