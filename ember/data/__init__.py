"""ember.data (torchdata): the TorchData pipes of the 1.11 release, as
``ember.data.datapipes``; ``python -m ember.run`` maps ``import torchdata`` here."""
from ember.data import datapipes

__all__ = ["datapipes"]
