"""Voice activity detection (sox ``vad``)."""


def vad(waveform, sample_rate, *args, **kwargs):
    raise NotImplementedError("ember.audio.functional.vad is not implemented yet")
