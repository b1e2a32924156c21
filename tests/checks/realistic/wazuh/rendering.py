"""The agents' manifests, rendered from the Jinja templates next to this file (as the Wazuh operators do)."""

import hashlib
import json
import pathlib

import jinja2
import yaml

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(pathlib.Path(__file__).parent / "templates"),
    undefined=jinja2.StrictUndefined,  # a value the template needs and was not given fails the rendering
    keep_trailing_newline=True,
)

DEFAULTS = {"port": 1514, "version": "4.8.2", "group": "default", "logLevel": "info"}


def values_of(name, spec):
    """The templates' values for an agent: its spec with the defaults of the fields it leaves out."""
    spec = {**DEFAULTS, **spec}
    return {
        "name": name,
        "manager": spec["manager"],
        "port": spec["port"],
        "version": spec["version"],
        "group": spec["group"],
        "log_level": spec["logLevel"],
    }


def render(template, **values):
    """One manifest (a dict) rendered from its template."""
    return yaml.safe_load(TEMPLATES.get_template(template).render(**values))


def config_hash(configmap):
    """A digest of the agents' configuration: in the pods' annotations, so that a new one rolls them."""
    return hashlib.sha256(json.dumps(configmap["data"], sort_keys=True).encode()).hexdigest()[:16]
