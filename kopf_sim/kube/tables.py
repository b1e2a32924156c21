"""Server-side printing: ``meta.k8s.io/v1 Table`` responses that ``kubectl get`` asks for."""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Callable, Iterable
from typing import Any

from kopf_sim.kube.objects import JsonDict, compact_json, meta, resolve_path
from kopf_sim.kube.resources import PrinterColumn, ResourceType
from kopf_sim.timing.clock import parse_timestamp

TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a Table first (kubectl get does; kubectl get -o json does not)."""
    if "as=Table" not in accept:  # most requests: not worth parsing
        return False
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and ("g=meta.k8s.io" in params):
            return True
        if part.strip().startswith("application/json") and "as=Table" not in params:
            return False
    return False


def human_duration(seconds: float) -> str:
    """A short age such as ``45s``, ``3m20s``, ``5h``, ``2d3h``: the style kubectl prints."""
    if seconds < -1:
        return "<invalid>"
    seconds = max(0, int(seconds))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 730:
        return f"{days}d"
    years = days // 365
    if years < 8:
        return f"{years}y{days % 365}d" if days % 365 else f"{years}y"
    return f"{years}y"


def column_definitions(rtype: ResourceType) -> list[JsonDict]:
    columns = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "priority": 0,
            "description": "Name must be unique within a namespace.",
        }
    ]
    for column in rtype.printer_columns:
        columns.append(
            {
                "name": column.name,
                "type": column.type,
                "format": column.format,
                "priority": column.priority,
                "description": column.description,
            }
        )
    return columns


def _cell(column: PrinterColumn, obj: JsonDict, now: datetime.datetime) -> Any:
    if column.render is not None:
        return column.render(obj, now)
    value = resolve_path(obj, column.json_path)
    if column.total_path:
        return f"{value or 0}/{resolve_path(obj, column.total_path) or 0}"
    if value is None and column.default is not None:
        return column.default
    if column.type == "date" and isinstance(value, str):
        try:
            return human_duration((now - _moment(value)).total_seconds())
        except ValueError:
            return value
    if value is None:
        return None if column.type in ("integer", "number", "boolean") else "<none>"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, separators=(",", ":"))
    return value


@functools.lru_cache(maxsize=1024)
def _moment(timestamp: str) -> datetime.datetime:
    """A timestamp parsed once: a page's objects were often made in the same few seconds."""
    return parse_timestamp(timestamp)


def row(rtype: ResourceType, obj: JsonDict, now: datetime.datetime, include: str = "Metadata") -> JsonDict:
    cells = [meta(obj).get("name")] + [_cell(c, obj, now) for c in rtype.printer_columns]
    result: JsonDict = {"cells": cells}
    if include == "Object":
        result["object"] = obj
    elif include != "None":
        result["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta(obj)}
    return result


def table_json(
    rtype: ResourceType,
    raws: Iterable[bytes],
    now: datetime.datetime,
    *,
    list_meta: JsonDict,
    include: str = "Metadata",
) -> bytes:
    """:func:`table` of stored objects (their compact JSON), encoded as compact JSON.

    A row of the usual kind (the objects' metadata, and columns that read only the metadata, as a ConfigMap's
    or a custom resource's age) decodes no more of its object than its metadata, and splices that metadata's
    bytes into the row as they are: a page of 500 costs a few milliseconds, not the decoding and encoding of
    500 objects. Other rows are made of the decoded objects, as :func:`table` makes them.
    """
    metadata_only = include == "Metadata" and all(_reads_metadata_only(column) for column in rtype.printer_columns)
    rows: list[str] = []
    for raw in raws:
        text = raw.decode()
        found = _metadata_in(text) if metadata_only else None
        if found is None:
            rows.append(compact_json(row(rtype, _scan_json(text, 0)[0], now, include)))
            continue
        metadata, start, end = found
        partial = {"metadata": metadata}
        cells = [metadata.get("name")] + [_cell(column, partial, now) for column in rtype.printer_columns]
        rows.append(f'{{"cells":{compact_json(cells)},"object":{_PARTIAL_METADATA}{text[start:end]}}}}}')
    envelope = compact_json(table(rtype, (), now, list_meta=list_meta, include=include))
    assert envelope.endswith(',"rows":[]}')
    return f"{envelope[:-3]}[{','.join(rows)}]}}".encode()


#: A row's object, up to its metadata's JSON (as :func:`row` makes it, encoded compactly).
_PARTIAL_METADATA = '{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":'
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_scan_string: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _reads_metadata_only(column: PrinterColumn) -> bool:
    return column.render is None and column.json_path.startswith(".metadata.") and not column.total_path


def _metadata_in(text: str) -> tuple[JsonDict, int, int] | None:
    """An object's metadata, and where its JSON is in the object's compact JSON (the fields before it decoded too)."""
    position = 1  # after the object's "{": a key, or the "}" of an empty object
    while position < len(text) and text[position] == '"':
        key, colon = _scan_string(text, position + 1)
        value, end = _scan_json(text, colon + 1)
        if key == "metadata":
            return (value, colon + 1, end) if isinstance(value, dict) else None
        position = end + 1  # past the "," (or the object's last "}")
    return None


def table(
    rtype: ResourceType,
    objs: Iterable[JsonDict],
    now: datetime.datetime,
    *,
    list_meta: JsonDict,
    include: str = "Metadata",
    with_columns: bool = True,
) -> JsonDict:
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": column_definitions(rtype) if with_columns else [],
        "rows": [row(rtype, obj, now, include) for obj in objs],
    }
