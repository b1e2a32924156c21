"""
Dynamic admission control: the webhooks (``webhooks``) and the writes that call them (``admitted_writes``).

It sits above the store: a write is prepared by the store's rules, sent to the mutating and validating
webhooks, and committed only if the object did not change in the meantime.
"""
