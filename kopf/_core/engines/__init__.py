"""Engines: specialised aspects of the framework (admission, daemons, indexing, etc.)."""
