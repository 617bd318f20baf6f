"""The models torchvision marks scriptable: ``jit.script`` of ember.vision's builds gives the
eager model's output (eval mode, small inputs, 10 classes)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.vision import models

# name -> input side (the smallest the network takes comfortably). vgg11_bn, resnext and
# wide_resnet share their code with vgg11 and resnet50 (and VGG's 100M-weight classifier is
# slow to build, so it is built without its init pass).
MODELS = {"resnet18": 64, "resnet50": 32, "alexnet": 96, "vgg11": 32, "mobilenet_v2": 32,
          "mobilenet_v3_small": 32, "squeezenet1_0": 64, "squeezenet1_1": 64,
          "densenet121": 32}
OPTIONS = {"vgg11": {"init_weights": False}}


@pytest.mark.parametrize("name", list(MODELS))
def test_scripted_model_matches_eager(name):
    ember.manual_seed(0)
    model = getattr(models, name)(num_classes=10, **OPTIONS.get(name, {})).eval()
    scripted = ember.jit.script(model)
    assert isinstance(scripted, ember.jit.ScriptModule)
    x = ember.randn(2, 3, MODELS[name], MODELS[name])
    with ember.no_grad():
        want, got = model(x), scripted(x)
    assert got.shape == (2, 10)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_scripted_resnet_trains_like_eager():
    ember.manual_seed(0)
    model = models.resnet18(num_classes=3)
    scripted = ember.jit.script(model)
    x = ember.randn(2, 3, 32, 32)
    scripted(x).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ember.manual_seed(0)
    model(x).sum().backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5)
