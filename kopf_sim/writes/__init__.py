"""
The write path, with no state of its own: how a request's body becomes the next stored object.

Typed decoding (``gotypes``, ``kinds``, ``typecheck``), the three patch formats (``patching``,
``mergekeys``), server-side apply (``applying``), CRD schemas (``schemas``), defaults (``defaulting``),
validation (``validation``), and the create/update/patch rules that put them together (``preparing``).
The store calls them; they only read the store through the small view that ``preparing`` declares.
"""
