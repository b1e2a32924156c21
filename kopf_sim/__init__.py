"""A simulated Kubernetes API server: an in-memory store with the apiserver's semantics.

It knows nothing of :mod:`kopf`: any Kubernetes client can talk to it, in-process
through :mod:`kopf_sim.transports.inmemory` or over HTTP(S) through :mod:`kopf_sim.transports.serving`.
"""
