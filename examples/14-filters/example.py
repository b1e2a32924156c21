"""Filters: which objects (and which changes) a handler serves, decided before it is called.

Every kind of filter, on the creation of KopfExamples (a handler's result in the status tells that it
has run); all the filters given to a handler must pass:

- a label with a given value (``labels={'tier': 'gold'}``);
- a value callback: a function of the label's value (None if absent) and the usual kwargs;
- an annotation that must be absent (``kopf.ABSENT``; ``kopf.PRESENT`` is the opposite);
- a callback of the whole object (``when=``), and their combinations (``kopf.all_``, ``kopf.not_``, ...);
- a field with a given value (``field=``, ``value=``);
- on updates, the field's value before and after (``old=``, ``new=``).

``summary`` has no filters: it serves all objects, and, declared last, runs after the others.
"""

from typing import Any

import kopf

PAUSED = "example.kopf.dev/paused"


def is_large(value: str | None, **_: Any) -> bool:
    return value is not None and value.isdigit() and int(value) >= 10


def has_items(spec: kopf.Spec, **_: Any) -> bool:
    return bool(spec.get("items"))


def is_trial(name: str, **_: Any) -> bool:
    return name.startswith("trial-")


@kopf.on.create("kopfexamples", labels={"tier": "gold"})
def gold_support(**_: Any) -> str:
    return "a support engineer is assigned"


@kopf.on.create("kopfexamples", labels={"size": is_large})
def extra_capacity(labels: kopf.Labels, **_: Any) -> str:
    return f"capacity reserved for {labels['size']} units"


@kopf.on.create("kopfexamples", annotations={PAUSED: kopf.ABSENT}, when=has_items)
def process_items(spec: kopf.Spec, **_: Any) -> int:
    return len(spec["items"])


@kopf.on.create("kopfexamples", when=kopf.all_([is_trial, kopf.not_(has_items)]))
def empty_trial(**_: Any) -> str:
    return "a trial with nothing to do"


@kopf.on.create("kopfexamples", field="spec.field", value="special")
def special_field(**_: Any) -> bool:
    return True


@kopf.on.update("kopfexamples", field="spec.field", old="draft", new="published")
def published(**_: Any) -> str:
    return "announced"


@kopf.on.update("kopfexamples", field="spec.field", old=kopf.PRESENT, new=kopf.ABSENT)
def field_removed(old: Any, **_: Any) -> str:
    return f"was {old!r}"


@kopf.on.create("kopfexamples")
@kopf.on.update("kopfexamples")
def summary(reason: kopf.Reason, spec: kopf.Spec, **_: Any) -> str:
    return f"{reason} with field={spec.get('field')!r}"
