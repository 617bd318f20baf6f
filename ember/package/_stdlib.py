"""Which modules belong to Python's standard library (used from the host, never packaged)."""
import sys

__all__ = ["is_stdlib_module"]

# (these two reach the whole interpreter: torch.package asks for an explicit extern)
RISKY_STDLIB = frozenset({"sys", "io"})


def is_stdlib_module(name: str) -> bool:
    top = name.partition(".")[0]
    return top in sys.stdlib_module_names and top not in RISKY_STDLIB
