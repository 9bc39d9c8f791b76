"""ACL bindings of the authorizer: list, add and remove them while the service runs.

An ACL is ``{"principal", "host", "resource_type", "resource_name", "pattern_type",
"operation", "permission_type"}`` with Kafka's values (see ``coordinator/security.py``); host
defaults to ``*``, pattern_type to LITERAL and permission_type to ALLOW. Adding or removing
ACLs without an authorizer (``authorizer.class.name`` / ``groupcoord.acls.enabled``) is a 409
``security_disabled``, as Kafka's CreateAcls/DeleteAcls answer SECURITY_DISABLED. A change
applies from the next request on.
"""
from __future__ import annotations

import structlog
from aiohttp import web

from ..security import (FILTER_FIELDS, OPERATIONS, PATTERN_TYPES, PERMISSION_TYPES, RESOURCE_TYPES, Acl,
                        make_filter)
from .app import json_body
from .errors import ApiError, error_responses

log = structlog.get_logger("groupcoord.admin")

routes = web.RouteTableDef()


def _authorizer(request: web.Request, *, required: bool):
    security = getattr(request.app["service"], "security", None)
    authorizer = None if security is None else security.authorizer
    if authorizer is None and required:
        raise ApiError(409, "security_disabled", "no authorizer is configured: set groupcoord.acls.enabled=true "
                                                 "or authorizer.class.name")
    return authorizer


def _filter(request: web.Request) -> dict:
    try:
        return make_filter(dict(request.query))
    except ValueError as exc:
        raise ApiError(400, "invalid_filter", str(exc)) from None


@routes.get("/api/acls")
async def list_acls(request: web.Request) -> web.Response:
    flt = _filter(request)
    authorizer = _authorizer(request, required=False)
    if authorizer is None:
        return web.json_response({"enabled": False, "super_users": [], "allow_everyone_if_no_acl_found": False,
                                  "acls": []})
    return web.json_response({
        "enabled": True, "super_users": sorted(authorizer.super_users),
        "allow_everyone_if_no_acl_found": authorizer.allow_everyone_if_no_acl_found,
        "acls": [a.as_dict() for a in authorizer.acls(flt)]})


@routes.post("/api/acls")
async def create_acls(request: web.Request) -> web.Response:
    body = await json_body(request)
    items = body["acls"] if set(body) == {"acls"} else [body]
    if not isinstance(items, list) or not items:
        raise ApiError(400, "invalid_body", "acls must be a non-empty list of ACL objects")
    acls = []
    for i, item in enumerate(items):
        try:
            acls.append(Acl.from_dict(item, strict=True))
        except ValueError as exc:
            where = f"acls[{i}]: " if "acls" in body else ""
            raise ApiError(400, "invalid_acl", f"{where}{exc}") from None
    authorizer = _authorizer(request, required=True)
    authorizer.add(acls)
    log.info("acls_created", acls=[a.as_dict() for a in acls])
    return web.json_response({"created": [a.as_dict() for a in acls]}, status=201)


@routes.delete("/api/acls")
async def delete_acls(request: web.Request) -> web.Response:
    flt = _filter(request)
    authorizer = _authorizer(request, required=True)
    gone = authorizer.remove(flt)
    log.info("acls_deleted", filter=flt, count=len(gone))
    return web.json_response({"deleted": [a.as_dict() for a in gone]})


_REF = "#/components/schemas/"
SCHEMAS = {
    "Acl": {
        "type": "object",
        "required": ["principal", "resource_type", "resource_name", "operation"],
        "additionalProperties": False,
        "properties": {
            "principal": {"type": "string", "minLength": 3, "description": "Type:name, e.g. User:alice or User:*"},
            "host": {"type": "string", "minLength": 1, "default": "*"},
            "resource_type": {"type": "string", "enum": list(RESOURCE_TYPES)},
            "resource_name": {"type": "string", "minLength": 1, "description": "a name, a prefix, or * for all"},
            "pattern_type": {"type": "string", "enum": list(PATTERN_TYPES), "default": "LITERAL"},
            "operation": {"type": "string", "enum": list(OPERATIONS)},
            "permission_type": {"type": "string", "enum": list(PERMISSION_TYPES), "default": "ALLOW"},
        },
    },
    "AclList": {
        "type": "object",
        "required": ["enabled", "super_users", "allow_everyone_if_no_acl_found", "acls"],
        "properties": {
            "enabled": {"type": "boolean"},
            "super_users": {"type": "array", "items": {"type": "string"}},
            "allow_everyone_if_no_acl_found": {"type": "boolean"},
            "acls": {"type": "array", "items": {"$ref": _REF + "Acl"}},
        },
    },
}

_FILTERS = [{"name": f, "in": "query", "required": False,
             "schema": {"type": "string", "enum": list(v)} if (v := {"resource_type": RESOURCE_TYPES,
                                                                    "pattern_type": PATTERN_TYPES,
                                                                    "operation": OPERATIONS,
                                                                    "permission_type": PERMISSION_TYPES}.get(f))
             else {"type": "string", "minLength": 1}}
            for f in FILTER_FIELDS]


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


PATHS = {
    "/api/acls": {
        "get": {
            "summary": "The authorizer's settings and ACL bindings (filtered by exact field values)",
            "operationId": "listAcls",
            "parameters": _FILTERS,
            "responses": {"200": _json({"$ref": _REF + "AclList"}, "The ACLs"), **error_responses(400)},
        },
        "post": {
            "summary": "Add ACL bindings (one ACL object, or {\"acls\": [...]})",
            "operationId": "createAcls",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": [
                {"$ref": _REF + "Acl"},
                {"type": "object", "required": ["acls"], "additionalProperties": False,
                 "properties": {"acls": {"type": "array", "minItems": 1, "items": {"$ref": _REF + "Acl"}}}},
            ]}}}},
            "responses": {"201": _json({"type": "object", "properties": {
                "created": {"type": "array", "items": {"$ref": _REF + "Acl"}}}}, "The ACLs were added"),
                **error_responses(400, 401, 409)},
        },
        "delete": {
            "summary": "Remove the ACL bindings matching the filters (all of them without filters)",
            "operationId": "deleteAcls",
            "parameters": _FILTERS,
            "responses": {"200": _json({"type": "object", "properties": {
                "deleted": {"type": "array", "items": {"$ref": _REF + "Acl"}}}}, "The ACLs removed"),
                **error_responses(400, 401, 409)},
        },
    },
}
