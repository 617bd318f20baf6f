"""Readers of torchaudio's data sets from local folders in torchaudio's layouts (ember
downloads nothing: ``download=True`` on a missing folder raises)."""
from ember.audio.datasets.cmuarctic import CMUARCTIC  # noqa: F401
from ember.audio.datasets.gtzan import GTZAN  # noqa: F401
from ember.audio.datasets.speechcommands import SPEECHCOMMANDS  # noqa: F401
from ember.audio.datasets.yesno import YESNO  # noqa: F401
