"""torch.ao.nn.intrinsic.quantized.modules: each file's modules, imported here."""
