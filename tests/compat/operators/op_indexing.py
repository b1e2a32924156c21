"""Indices: by field, of objects' names; the handlers see them as kwargs, consistent with each other."""

from compat_record import record

import kopf


@kopf.on.startup()
def configure(settings, **_):
    settings.posting.loggers = True  # on in both: the indexing & watching handlers' messages are not posted


@kopf.on.event("kopfexamples")
def watched(logger, **_):
    logger.info("A watch-event is seen.")


@kopf.index("kopfexamples")
def by_field(name, spec, logger, **_):
    logger.info("Indexing by the field.")
    return {spec.get("field", "-"): name}


@kopf.index("kopfexamples")
def names(name, namespace, **_):
    return name


@kopf.index("kopfexamples", labels={"indexed": "no"})
def filtered(name, **_):
    return {"filtered": name}


@kopf.index("kopfexamples")
def labels(name, **_):
    """Named like a built-in kwarg: the index overrides it."""
    return {"all": name}


@kopf.on.create("kopfexamples", labels={"role": "checker"})
@kopf.on.update("kopfexamples", labels={"role": "checker"})
def check(name, by_field, names, filtered, labels, **_):
    record(
        "check",
        name,
        by_field={key: sorted(values) for key, values in by_field.items()},
        names={str(key): sorted(values) for key, values in names.items()},
        filtered={key: sorted(values) for key, values in filtered.items()},
        labels={key: sorted(values) for key, values in labels.items()},
    )
