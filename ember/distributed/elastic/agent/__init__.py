"""Elastic agents."""
