"""
The Kubernetes API's vocabulary, with no state and no HTTP: what every layer above shares.

JSON objects and their metadata (``objects``), resource types and the catalogue of the built-in ones
(``resources``, ``builtin_resources``, ``crds``), ``Status`` errors (``errors``), label and field selectors
(``selectors``), and ``Table`` rendering with its printer columns (``tables``, ``printers``).
"""
