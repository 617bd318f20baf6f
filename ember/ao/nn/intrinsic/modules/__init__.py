"""torch.ao.nn.intrinsic.modules: each file's modules, imported here."""
