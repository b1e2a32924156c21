"""Kits: optional tools for operator developers; the framework itself does not use them."""
