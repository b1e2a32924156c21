"""The framework's version: the distribution's metadata takes it from here (``pyproject.toml``: dynamic).

Read at import by the API clients' User-Agent; ``importlib.metadata`` would cost every operator's start
~3 MiB and ~15 ms for one string.
"""

__version__ = "0.1.0"
