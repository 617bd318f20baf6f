"""torch.ao.nn.quantized.dynamic.modules: each file's modules, imported here."""
