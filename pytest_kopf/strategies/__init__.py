"""Hypothesis strategies for operator tests (``pip install hypothesis``, in the ``test`` extra)."""
from .logs import MUTATIONS, coalesce_event, delay_event, drop_event, duplicate_event, mutated_logs

__all__ = ["MUTATIONS", "coalesce_event", "delay_event", "drop_event", "duplicate_event", "mutated_logs"]
