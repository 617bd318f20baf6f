"""torch.ao.nn.qat.modules: each file's modules, imported here."""
