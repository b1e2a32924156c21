"""
Dynamic admission control: what the apiserver asks before it stores a write (``control``).

The write pipeline (:mod:`kopf_sim.store.pipeline`) hands each prepared write to it: mutating webhooks
change the object, validating webhooks accept or refuse it. It reads the store (the webhook configurations,
namespaces) through a small view, and writes nothing: the pipeline commits what it admits.
"""
