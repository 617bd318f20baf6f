"""torch.ao.ns: the Numeric Suite (eager: ``_numeric_suite``; FX: ``_numeric_suite_fx``)."""
