"""Patches of all three kinds, as the apiserver applies them."""
