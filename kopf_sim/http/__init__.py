"""
The HTTP face of the simulated apiserver: the aiohttp application (``app``) and what it serves.

Discovery and OpenAPI documents (``discovery``, ``openapi``, ``swagger``, ``swagger_proto``), request
bodies in JSON, YAML and protobuf (``bodies``, ``yamlbodies``, ``protobuf``), query parameters
(``queries``), and fault injection as a middleware (``faults``). Below it, nothing knows of HTTP.
"""
