"""Paint each KopfExample the colour of its spec.field; the paint shop is busy at every first repaint attempt."""

import kopf


@kopf.on.create("kopfexamples")
def paint(name, spec, logger, **_):
    logger.info(f"Painting {name} {spec.get('field')}.")
    return {"colour": spec.get("field")}


@kopf.on.update("kopfexamples", field="spec.field")
def repaint(name, old, new, retry, logger, **_):
    if retry == 0:
        raise kopf.TemporaryError(f"The paint shop is busy: {name} stays {old} for now.", delay=10)
    logger.info(f"Repainting {name} from {old} to {new}.")
    return {"colour": new}


@kopf.on.delete("kopfexamples")
def scrap(name, status, logger, **_):
    painted = [result.get("colour") for result in (status.get("paint"), status.get("repaint/spec.field")) if result]
    logger.info(f"Scrapping {name}, last painted {painted[-1] if painted else 'never'}.")
