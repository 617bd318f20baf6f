"""``GlobGroup``: the module patterns of ``intern``/``extern``/``mock``/``deny``.

A pattern is split at the separator ('.' for modules, '/' for archive paths). A ``*`` inside a
segment matches any characters of that one segment; a ``**`` segment matches any number of
whole segments, none included: ``'torch.**'`` matches ``torch`` and ``torch.nn.functional``.
A candidate matches a group when it matches an include pattern and no exclude pattern.
"""
import re
from typing import Iterable, Union

__all__ = ["GlobGroup", "GlobPattern"]

GlobPattern = Union[str, Iterable[str]]


class GlobGroup:
    """``GlobGroup('my_pkg.**', exclude=['my_pkg.tests.**']).matches('my_pkg.io')`` -> True."""

    def __init__(self, include: GlobPattern, *, exclude: GlobPattern = (), separator: str = "."):
        self._shown_include = include          # printed as given (torch's messages do)
        self._shown_exclude = exclude
        self.separator = separator
        self.include = [self._compile(p) for p in _as_list(include)]
        self.exclude = [self._compile(p) for p in _as_list(exclude)]

    def __str__(self):
        return f"GlobGroup(include={self._shown_include}, exclude={self._shown_exclude})"

    __repr__ = __str__

    def matches(self, candidate: str) -> bool:
        name = str(candidate)
        return (any(rx.fullmatch(name) for rx in self.include)
                and not any(rx.fullmatch(name) for rx in self.exclude))

    def _compile(self, pattern):
        """One pattern as a regular expression over the whole candidate."""
        sep = re.escape(self.separator)
        not_sep = f"[^{sep}]"
        pieces = []                  # (is_double_star, regex of the segment)
        for seg in pattern.split(self.separator):
            if seg == "**":
                pieces.append((True, None))
            elif "**" in seg:
                raise ValueError("** can only appear as an entire path segment")
            else:
                pieces.append((False, f"{not_sep}*".join(re.escape(s) for s in seg.split("*"))))
        # each ordinary segment is preceded by a separator unless it starts the name; a '**'
        # stands for zero or more "segment + separator" (or "separator + segment") runs
        out, at_start = "", True
        for i, (double, rx) in enumerate(pieces):
            if double:
                if at_start and i + 1 < len(pieces):     # leading: "seg." repeated
                    out += f"(?:{not_sep}+{sep})*"
                elif at_start:                           # the whole pattern: 1+ segments
                    out += f"{not_sep}+(?:{sep}{not_sep}+)*"
                else:
                    out += f"(?:{sep}{not_sep}+)*"
            else:
                out += (rx if at_start else sep + rx)
                at_start = False
        return re.compile(out)


def _as_list(patterns):
    return [patterns] if isinstance(patterns, str) else list(patterns)
