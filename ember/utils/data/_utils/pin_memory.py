"""Pinned memory: a no-op in ember (there is no accelerator to pin for)."""
from __future__ import annotations


def pin_memory(data, device=None):
    return data
