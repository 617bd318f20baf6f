"""torch.ao.nn.intrinsic.qat.modules: each file's modules, imported here."""
