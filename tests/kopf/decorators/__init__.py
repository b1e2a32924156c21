"""kopf.on.* and kopf.subhandler: what each decorator registers, with which options."""
