"""Errors of the admin API: always a JSON body with a 4xx (or 5xx) status, never a traceback.

:func:`validate` checks a decoded JSON value against the subset of OpenAPI 3.0 schemas the
admin modules use for request bodies and query parameters (``type``, ``nullable``, ``enum``,
``properties``, ``required``, ``additionalProperties``, ``items``, ``minItems``, ``maxItems``,
``uniqueItems``, ``minimum``, ``maximum``, ``minLength``, ``maxLength``, ``pattern``, ``oneOf``), so that the
document served at ``/openapi.json`` is also what the handlers enforce.
"""
from __future__ import annotations

import re

from aiohttp import web


class ApiError(Exception):
    """Raise from a handler: answered as ``{"error": code, "message": message}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str, headers=None) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status, headers=headers)


#: OpenAPI schema of every error body
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "message"],
    "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
}


def error_responses(*statuses: int) -> dict:
    """OpenAPI ``responses`` entries for error statuses, each an ``Error`` body."""
    text = {400: "Invalid request", 401: "Missing or wrong bearer token",
            403: "A browser's request from another origin or host name", 404: "Not found",
            409: "Conflicts with the current state", 413: "Body too large"}
    return {str(s): {"description": text.get(s, "Error"),
                     "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
            for s in statuses}


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def _problem(value, schema: dict, where: str) -> str | None:
    """Why ``value`` does not match ``schema``, or None."""
    if value is None:
        return None if schema.get("nullable") else f"{where} must not be null"
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if _problem(value, s, where) is None]
        if len(matches) == 1:
            return None
        return f"{where} must be {schema.get('description') or 'one of the documented forms'}"
    kind = schema.get("type")
    if kind is not None and not _TYPES[kind](value):
        return f"{where} must be of type {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{where} must have at least {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where} must have at most {schema['maxLength']} characters"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return f"{where} must match {schema['pattern']}"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where} must be at least {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where} must be at most {schema['maximum']}"
    elif isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{where} must have at least {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{where} must have at most {schema['maxItems']} items"
        items = schema.get("items")
        if schema.get("uniqueItems"):
            seen = set()
            for item in value:
                key = repr(item)
                if key in seen:
                    return f"{where} must not repeat {item!r}"
                seen.add(key)
        if items is not None:
            for i, item in enumerate(value):
                problem = _problem(item, items, f"{where}[{i}]")
                if problem:
                    return problem
    elif isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                return f"{where} needs '{key}'"
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = props.get(key)
            if sub is None:
                if extra is False:
                    return f"{where} has an unknown field '{key}' (known: {', '.join(props) or 'none'})"
                if isinstance(extra, dict):
                    sub = extra
                else:
                    continue
            problem = _problem(item, sub, f"{where}.{key}" if where else key)
            if problem:
                return problem
    return None


def validate(value, schema: dict, where: str = "body") -> None:
    """Raise ``ApiError(400, "invalid_request", ...)`` unless ``value`` matches ``schema``."""
    problem = _problem(value, schema, where)
    if problem is not None:
        raise ApiError(400, "invalid_request", problem)
