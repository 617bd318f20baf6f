"""torch.ao.ns.fx: the FX Numeric Suite's passes and utilities."""
