"""Core: the framework's essence — actions, intents, engines, reactor."""
