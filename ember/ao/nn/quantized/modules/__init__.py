"""torch.ao.nn.quantized.modules: each file's modules, imported here."""
