"""torch.ao.nn.qat.dynamic.modules: each file's modules, imported here."""
