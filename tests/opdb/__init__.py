"""All op database entries, collected from the family modules."""
import importlib
import pkgutil

OP_DB = []
for _m in pkgutil.iter_modules(__path__):
    OP_DB.extend(importlib.import_module(f"{__name__}.{_m.name}").OPS)
