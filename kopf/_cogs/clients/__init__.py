"""
The API clients: the only layer of the framework that talks to the Kubernetes API.

Every request goes through :mod:`.auth` (credentials from the vault, re-login on HTTP 401)
and :mod:`.api` (timeouts & retries from the settings). The other modules are the specific
operations: listing, watching, patching, creating, deleting, posting k8s-events, discovery.
"""
