"""Operator settings and the storages they refer to (progress, diff-base)."""
