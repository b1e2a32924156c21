"""Sub-handlers: registered at run time (kopf.register, @kopf.subhandler), with their own ids & results."""

from compat_record import record

import kopf


@kopf.on.create("kopfexamples")
def parent(name, spec, **_):
    record("parent", name)
    for item in spec.get("items", []):

        def child(item=item, **_):
            record("child", name, item=item)
            return {"item": item}

        kopf.register(fn=child, id=f"item-{item}")

    @kopf.subhandler(id="decorated")
    def decorated(retry, **_):
        record("decorated", name, retry=retry)
        if retry == 0:
            raise kopf.TemporaryError("Once more.", delay=0.5)
        return "sub-done"
