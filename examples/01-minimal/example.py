"""The smallest operator: greet every new KopfExample; the result goes to its status."""

import kopf


@kopf.on.create("kopfexamples")
def create_fn(spec, name, logger, **_):
    logger.info(f"A new example {name!r} with spec={dict(spec)!r}. And here we are!")
    return {"message": f"hello, {name}"}
