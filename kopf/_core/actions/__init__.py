"""Actions: the lowest layer of the core — how handlers are invoked, retried, and fail."""
