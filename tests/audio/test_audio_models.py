"""ember.audio.models: output shapes, torchaudio's state_dict key layout, and the wav2vec 2.0
padding mask (a padded batch equals each waveform run alone)."""
import os
import subprocess
import sys

import pytest

import ember as torch
from ember.audio import models


@pytest.mark.parametrize("input_type,shape,frames", [("waveform", (2, 1, 16000), 51),
                                                     ("mfcc", (2, 13, 100), 51),
                                                     ("power_spectrum", (1, 201, 40), 21)])
def test_wav2letter_shapes_and_log_probs(input_type, shape, frames):
    torch.manual_seed(0)
    m = models.Wav2Letter(num_classes=12, input_type=input_type, num_features=shape[1])
    out = m(torch.randn(*shape))
    assert out.shape == (shape[0], 12, frames)
    torch.testing.assert_close(out.exp().sum(1), torch.ones(shape[0], frames))
    keys = list(m.state_dict())
    if input_type == "waveform":
        assert keys[:4] == ["acoustic_model.0.0.weight", "acoustic_model.0.0.bias",
                            "acoustic_model.1.0.weight", "acoustic_model.1.0.bias"]
        assert keys[-1] == "acoustic_model.1.20.bias" and len(keys) == 24
    else:
        assert keys[0] == "acoustic_model.0.weight" and keys[-1] == "acoustic_model.20.bias"
    with pytest.raises(ValueError):
        models.Wav2Letter(input_type="spectrogram")


def _base_keys(aux):
    keys = ["feature_extractor.conv_layers.0.layer_norm.weight",
            "feature_extractor.conv_layers.0.layer_norm.bias"]
    keys += [f"feature_extractor.conv_layers.{i}.conv.weight" for i in range(7)]
    keys += [f"encoder.feature_projection.{m}.{p}" for m in ("layer_norm", "projection")
             for p in ("weight", "bias")]
    keys += ["encoder.transformer.pos_conv_embed.conv.bias",
             "encoder.transformer.pos_conv_embed.conv.parametrizations.weight.original0",
             "encoder.transformer.pos_conv_embed.conv.parametrizations.weight.original1",
             "encoder.transformer.layer_norm.weight", "encoder.transformer.layer_norm.bias"]
    for i in range(12):
        pre = f"encoder.transformer.layers.{i}."
        keys += [pre + f"attention.{p}_proj.{w}" for p in "kvq" for w in ("weight", "bias")]
        keys += [pre + f"attention.out_proj.{w}" for w in ("weight", "bias")]
        keys += [pre + f"layer_norm.{w}" for w in ("weight", "bias")]
        keys += [pre + f"feed_forward.{d}.{w}" for d in ("intermediate_dense", "output_dense")
                 for w in ("weight", "bias")]
        keys += [pre + f"final_layer_norm.{w}" for w in ("weight", "bias")]
    return set(keys) | ({"aux.weight", "aux.bias"} if aux else set())


def test_wav2vec2_base_state_dict_layout_and_shapes():
    torch.manual_seed(0)
    m = models.wav2vec2_base(aux_num_out=29)
    sd = m.state_dict()
    assert set(sd) == _base_keys(True)
    assert sd["feature_extractor.conv_layers.0.conv.weight"].shape == (512, 1, 10)
    assert sd["feature_extractor.conv_layers.6.conv.weight"].shape == (512, 512, 2)
    assert sd["encoder.feature_projection.projection.weight"].shape == (768, 512)
    assert sd["encoder.transformer.pos_conv_embed.conv.parametrizations.weight.original0"
              ].shape == (1, 1, 128)
    assert sd["encoder.transformer.pos_conv_embed.conv.parametrizations.weight.original1"
              ].shape == (768, 48, 128)
    assert sd["encoder.transformer.layers.11.feed_forward.intermediate_dense.weight"
              ].shape == (3072, 768)
    assert sd["aux.weight"].shape == (29, 768)
    assert set(models.wav2vec2_base().state_dict()) == _base_keys(False)


def _small(mode="layer_norm", aux=7):
    return models.wav2vec2_model(mode, [(16, 10, 5), (16, 3, 2), (16, 2, 2)], mode ==
                                 "layer_norm", 24, 0.0, 8, 4, 2, 4, 0.0, 32, 0.0, 0.0,
                                 mode == "layer_norm", 0.0, aux).eval()


def test_wav2vec2_forward_lengths_and_padding_mask():
    torch.manual_seed(0)
    m = _small()
    x = torch.randn(2, 2000)
    lengths = torch.tensor([2000, 1200])
    with torch.no_grad():
        out, out_len = m(x, lengths)
        alone, alone_len = m(x[1:, :1200])
    # frames: floor((L - 10) / 5) + 1, then / 2 twice
    assert out.shape == (2, 99, 7) and out_len.tolist() == [99, 59]
    assert alone.shape == (1, 59, 7) and alone_len is None
    torch.testing.assert_close(out[1, :59], alone[0], atol=1e-4, rtol=1e-4)
    feats, _ = m.extract_features(x, lengths)
    assert len(feats) == 2 and feats[0].shape == (2, 99, 24)
    with pytest.raises(ValueError):
        m(torch.randn(2, 1, 2000))


def test_wav2vec2_loads_weight_g_weight_v_checkpoints():
    torch.manual_seed(0)
    a, b = _small("group_norm", None), _small("group_norm", None)
    old = {k.replace("parametrizations.weight.original0", "weight_g")
            .replace("parametrizations.weight.original1", "weight_v"): v
           for k, v in a.state_dict().items()}
    b.load_state_dict(old)
    x = torch.randn(1, 800)
    with torch.no_grad():
        torch.testing.assert_close(a(x)[0], b(x)[0])


def test_ember_run_maps_torchaudio(tmp_path):
    script = tmp_path / "uses_torchaudio.py"
    script.write_text("import torch, torchaudio\n"
                      "from torchaudio.models import Wav2Letter\n"
                      "import torchaudio.functional as F\n"
                      "x = torch.rand(1, 800) - 0.5\n"
                      "print(torchaudio.__name__, Wav2Letter.__module__,\n"
                      "      tuple(F.lowpass_biquad(x, 8000, 1000.0).shape))\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-m", "ember.run", str(script)], cwd=root,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ember.audio", "ember.audio.models.wav2letter", "(1,", "800)"]
