from ember import nn


class Wav2Letter(nn.Module):
    """Wav2Letter (Collobert et al. 2016): a stack of 1-D convolutions producing
    ``(batch, num_classes, frames)`` log-probabilities.

    ``input_type`` "waveform" (input ``(batch, num_features, time)``, a strided front-end
    conv first), "power_spectrum" or "mfcc" (input ``(batch, num_features, frames)``)."""

    def __init__(self, num_classes=40, input_type="waveform", num_features=1):
        super().__init__()
        if input_type not in ("waveform", "power_spectrum", "mfcc"):
            raise ValueError(f"Wav2Letter: unknown input_type {input_type!r}")
        acoustic_features = 250 if input_type == "waveform" else num_features
        layers = [nn.Conv1d(acoustic_features, 250, kernel_size=48, stride=2, padding=23),
                  nn.ReLU(inplace=True)]
        for _ in range(7):
            layers += [nn.Conv1d(250, 250, kernel_size=7, stride=1, padding=3),
                       nn.ReLU(inplace=True)]
        layers += [nn.Conv1d(250, 2000, kernel_size=32, stride=1, padding=16),
                   nn.ReLU(inplace=True),
                   nn.Conv1d(2000, 2000, kernel_size=1, stride=1, padding=0),
                   nn.ReLU(inplace=True),
                   nn.Conv1d(2000, num_classes, kernel_size=1, stride=1, padding=0),
                   nn.ReLU(inplace=True)]
        acoustic_model = nn.Sequential(*layers)
        if input_type == "waveform":
            front = nn.Sequential(nn.Conv1d(num_features, 250, kernel_size=250, stride=160,
                                            padding=45), nn.ReLU(inplace=True))
            self.acoustic_model = nn.Sequential(front, acoustic_model)
        else:
            self.acoustic_model = acoustic_model

    def forward(self, x):
        return nn.functional.log_softmax(self.acoustic_model(x), dim=1)
