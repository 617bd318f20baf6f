"""torchaudio.models: Wav2Letter and the wav2vec 2.0 architecture (no pretrained weights)."""
from ember.audio.models.wav2letter import Wav2Letter  # noqa: F401
from ember.audio.models.wav2vec2 import (  # noqa: F401
    Wav2Vec2Model, wav2vec2_base, wav2vec2_large, wav2vec2_model)
