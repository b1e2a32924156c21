"""Intents: the declared handlers, their filters & registries, and the decorators' plumbing."""
