"""ember.audio.functional: torchaudio.functional on ember tensors (``(..., time)``
waveforms, ``(..., freq, time)`` spectrograms)."""
from ember.audio.functional._filtering import (  # noqa: F401
    allpass_biquad, band_biquad, bandpass_biquad, bandreject_biquad, bass_biquad, biquad,
    equalizer_biquad, filtfilt, highpass_biquad, lfilter, lowpass_biquad, riaa_biquad,
    treble_biquad)
from ember.audio.functional._spectral import (  # noqa: F401
    DB_to_amplitude, amplitude_to_DB, compute_deltas, create_dct, detect_pitch_frequency,
    griffinlim, inverse_spectrogram, linear_fbanks, mask_along_axis, mask_along_axis_iid,
    melscale_fbanks, mu_law_decoding, mu_law_encoding, phase_vocoder, spectral_centroid,
    spectrogram)
from ember.audio.functional._effects import (  # noqa: F401
    contrast, dcshift, dither, flanger, gain, overdrive, phaser, resample,
    sliding_window_cmn)
from ember.audio.functional._vad import vad  # noqa: F401
