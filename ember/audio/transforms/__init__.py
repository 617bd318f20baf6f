"""ember.audio.transforms: torchaudio.transforms as ``nn.Module``s over the functional
ops (window and filter banks are buffers, as torchaudio registers them)."""
from ember.audio.transforms._transforms import (  # noqa: F401
    AmplitudeToDB, ComputeDeltas, Fade, FrequencyMasking, GriffinLim, InverseMelScale,
    InverseSpectrogram, LFCC, MFCC, MelScale, MelSpectrogram, MuLawDecoding, MuLawEncoding,
    Resample, SlidingWindowCmn, SpectralCentroid, Spectrogram, TimeMasking, TimeStretch,
    Vad, Vol)
