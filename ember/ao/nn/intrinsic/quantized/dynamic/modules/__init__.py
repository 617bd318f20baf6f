"""torch.ao.nn.intrinsic.quantized.dynamic.modules: each file's modules, imported here."""
