"""torch.ao.quantization: observers, fake quantization, qconfigs, eager-mode
prepare/convert. FX graph mode (``quantize_fx``) loads on first use."""
