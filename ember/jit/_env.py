"""The compiler's environment: what each name means in a block (a Value or a Sugar),
looked up through the enclosing blocks."""
from __future__ import annotations

from ember.jit import _sugar as S

MISSING = object()
POISONED = S.Sugar()        # a name that must not be read (assigned on one path only)


class Env:
    def __init__(self, block, parent=None):
        self.block, self.parent = block, parent
        self.vars = {}          # name -> Value or Sugar
        self.declared = {}      # name -> declared type (annotated assignments)
        self.defined_at = {}    # name -> SourceRange of the assignment (error messages)
        self.refined = {}       # name -> the Sugar a type refinement bound (not an assignment)

    def lookup(self, name):
        e = self
        while e is not None:
            if name in e.vars:
                return e.vars[name]
            e = e.parent
        return None

    def declared_type(self, name):
        e = self
        while e is not None:
            if name in e.declared:
                return e.declared[name]
            e = e.parent
        return None
