"""Cogs: utilities used throughout the framework, independent of its core."""
