"""The aiohttp application of the admin listener.

Shared state, set by :func:`make_app`:

``app["service"]``  the :class:`~groupcoord.coordinator.service.Service`
``app["server"]``   the TCP :class:`~groupcoord.coordinator.server.Server` (node down/up, connections)
``app["token"]``    the bearer token required by mutating endpoints, or None

Every module in :data:`MODULES` exports ``routes`` (``web.RouteTableDef``) and ``PATHS``
(OpenAPI path items for them); it may export ``SCHEMAS`` (components) and ``setup(app)``
(called once, e.g. to subscribe to the event bus). Handlers raise :class:`.errors.ApiError`
for anything the caller got wrong; :func:`json_body` parses (and with ``schema=`` validates) a
JSON object; :func:`changed` re-arms the server's timers after a change made outside a Kafka
request. Two modules may describe the same path, not the same operation or schema name
differently. With a token, mutating operations get ``security`` and a 401 in the document.
"""
from __future__ import annotations

import hmac
import importlib
import ipaddress
import json
import warnings

import structlog
from aiohttp import web

from .errors import ERROR_SCHEMA, ApiError, error_response, error_responses, validate

log = structlog.get_logger("groupcoord.admin")

MODULES = (
    "groupcoord.coordinator.admin.cluster_api",
    "groupcoord.coordinator.admin.groups_api",
    "groupcoord.coordinator.admin.transactions_api",
    "groupcoord.coordinator.admin.faults_api",
    "groupcoord.coordinator.admin.events_api",
    "groupcoord.coordinator.admin.metrics_api",
    "groupcoord.coordinator.admin.acls_api",
    "groupcoord.coordinator.admin.web_page",
)

_MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenRequired(ValueError):
    """The HTTP listener would be reachable from other hosts without a token."""


def check_exposure(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise TokenRequired(
            f"the admin HTTP listener on {host} is not on loopback: give it a bearer token "
            "(--http-token or GROUPCOORD_HTTP_TOKEN) so that its mutating endpoints are protected")


@web.middleware
async def _errors(request: web.Request, handler):
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc.status, exc.code, exc.message)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {k: v for k, v in exc.headers.items() if k.lower() in ("allow", "www-authenticate")}
        message = exc.text or exc.reason
        if exc.status == 404 and message == "404: Not Found":
            message = f"no such endpoint: {request.method} {request.path} (see /openapi.json)"
        elif exc.status == 405:
            message = f"{request.method} is not allowed on {request.path}; allowed: {headers.get('Allow', '')}"
        return error_response(exc.status, exc.reason.lower().replace(" ", "_"), message, headers=headers)
    except json.JSONDecodeError as exc:
        return error_response(400, "invalid_json", f"the body is not JSON: {exc}")
    except Exception:
        log.exception("admin_handler_failed", path=request.path, method=request.method)
        return error_response(500, "internal_error", "the request failed inside groupcoord; see its log")


def foreign_origin(request: web.Request) -> str | None:
    """The request's Origin header when a browser sent it from another origin, else None."""
    origin = request.headers.get("Origin")
    if origin is None or origin == f"{request.scheme}://{request.host}":
        return None
    return origin


def _loopback_host(request: web.Request) -> bool:
    try:
        host = request.url.host
    except ValueError:
        return False
    return host is not None and is_loopback(host)


@web.middleware
async def _auth(request: web.Request, handler):
    token = request.app["token"]
    if not token and not _loopback_host(request):
        # without a token the listener is on loopback: another Host name is a DNS-rebinding page
        return error_response(403, "host_not_allowed", f"Host {request.host!r} is not a loopback name or address; "
                              "without a token the admin API answers only to them")
    if request.method in _MUTATING:
        # a browser on another site can send a mutating "simple" request (no preflight, no
        # token needed on loopback); it always names its origin, so refuse a foreign one
        origin = foreign_origin(request)
        if origin is not None:
            return error_response(403, "cross_origin", f"a mutating request from origin {origin!r} is refused: "
                                  "the admin API accepts them only from its own origin or non-browser clients")
    if token and request.method in _MUTATING:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            return error_response(401, "unauthorized", "this endpoint needs 'Authorization: Bearer <token>'",
                                  headers={"WWW-Authenticate": "Bearer"})
    return await handler(request)


def make_app(service, server=None, *, token: str | None = None) -> web.Application:
    # the shared state uses plain string keys (the module contract above), not web.AppKey
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", web.NotAppKeyWarning)
        return _make_app(service, server, token)


def _make_app(service, server, token: str | None) -> web.Application:
    app = web.Application(middlewares=[_errors, _auth])
    app["service"] = service
    app["server"] = server
    app["token"] = token
    paths: dict = {"/openapi.json": OPENAPI_PATH}
    schemas: dict = {"Error": ERROR_SCHEMA}
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue      # not written yet
        app.router.add_routes(module.routes)
        _merge_paths(paths, getattr(module, "PATHS", {}), name)
        for key, schema in getattr(module, "SCHEMAS", {}).items():
            if key in schemas and schemas[key] != schema:
                raise ValueError(f"{name} redefines the OpenAPI schema {key!r} differently")
            schemas[key] = schema
        setup = getattr(module, "setup", None)
        if setup is not None:
            setup(app)
    app["openapi"] = openapi_document(paths, schemas, secured=bool(token))
    app.router.add_get("/openapi.json", _openapi)
    return app


def _merge_paths(paths: dict, more: dict, module: str) -> None:
    for path, item in more.items():
        mine = paths.setdefault(path, {})
        for key, operation in item.items():
            if key in mine and mine[key] != operation:
                raise ValueError(f"{module} redefines {key.upper()} {path} in the OpenAPI document")
            mine[key] = operation


OPENAPI_PATH = {"get": {
    "summary": "This OpenAPI document",
    "operationId": "getOpenApi",
    "responses": {"200": {"description": "The OpenAPI 3 document of the admin API",
                          "content": {"application/json": {"schema": {"type": "object"}}}}},
}}

_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def openapi_document(paths: dict, schemas: dict, *, secured: bool = False) -> dict:
    """The OpenAPI 3.0 document. Every mutating operation documents the 403 of a browser's
    cross-origin request; with a token, it requires the bearer scheme and documents its 401."""
    out = {}
    for path, item in sorted(paths.items()):
        item = dict(item)
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if operation is None or method.upper() not in _MUTATING:
                continue
            operation = dict(operation)
            operation["responses"] = {**error_responses(403), **operation.get("responses", {})}
            if secured:
                operation["security"] = [{"bearer": []}]
                operation["responses"] = {**error_responses(401), **operation.get("responses", {})}
            item[method] = operation
        out[path] = item
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "groupcoord admin API", "version": "1",
                 "description": "Inspect and change the emulated cluster and its consumer groups, "
                                "inject faults, follow events. Errors are JSON bodies "
                                "{\"error\": code, \"message\": text}."},
        "paths": out,
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
    return doc


async def _openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app["openapi"])


async def json_body(request: web.Request, schema_name: str = "body", schema: dict | None = None) -> dict:
    """The request's JSON object (``{}`` without a body), or a 400; checked against ``schema``
    (an OpenAPI schema, see :func:`.errors.validate`) when given."""
    if not request.can_read_body:
        body = {}
    else:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(400, "invalid_json", f"the body is not JSON: {exc}") from None
        except RecursionError:
            raise ApiError(400, "invalid_json", "the body is not JSON we take: nested too deeply") from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_body", f"the {schema_name} must be a JSON object")
    if schema is not None:
        validate(body, schema, schema_name)
    return body


def changed(request: web.Request) -> None:
    """Call after changing the service's state outside a Kafka request (e.g. removing a member):
    the server re-arms its timer for the coordinator's new deadlines."""
    server = request.app["server"]
    if server is not None and getattr(server, "_loop", None) is not None:
        server.rearm()


class AdminListener:
    """Runs the app on host:port next to a Server (the same event loop)."""

    def __init__(self, service, server=None, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None):
        check_exposure(host, token)
        self.app = make_app(service, server, token=token)
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> "AdminListener":
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        log.info("admin_listening", url=self.url)
        return self

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
