"""The aiohttp application of the admin listener.

Shared state, set by :func:`make_app`:

``app["service"]``  the :class:`~groupcoord.coordinator.service.Service`
``app["server"]``   the TCP :class:`~groupcoord.coordinator.server.Server` (node down/up, connections)
``app["token"]``    the bearer token required by mutating endpoints, or None

Every module in :data:`MODULES` exports ``routes`` (``web.RouteTableDef``) and ``PATHS``
(OpenAPI path items for them); it may export ``SCHEMAS`` (components) and ``setup(app)``
(called once, e.g. to subscribe to the event bus). Handlers raise :class:`.errors.ApiError`
for anything the caller got wrong.
"""
from __future__ import annotations

import importlib
import ipaddress
import json

import structlog
from aiohttp import web

from .errors import ERROR_SCHEMA, ApiError, error_response

log = structlog.get_logger("groupcoord.admin")

MODULES = (
    "groupcoord.coordinator.admin.cluster_api",
    "groupcoord.coordinator.admin.groups_api",
    "groupcoord.coordinator.admin.faults_api",
    "groupcoord.coordinator.admin.events_api",
    "groupcoord.coordinator.admin.metrics_api",
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
        return error_response(exc.status, exc.reason.lower().replace(" ", "_"), exc.text or exc.reason)
    except json.JSONDecodeError as exc:
        return error_response(400, "invalid_json", f"the body is not JSON: {exc}")
    except Exception:
        log.exception("admin_handler_failed", path=request.path, method=request.method)
        return error_response(500, "internal_error", "the request failed inside groupcoord; see its log")


@web.middleware
async def _auth(request: web.Request, handler):
    token = request.app["token"]
    if token and request.method in _MUTATING:
        header = request.headers.get("Authorization", "")
        if header != f"Bearer {token}":
            return web.json_response(
                {"error": "unauthorized", "message": "this endpoint needs 'Authorization: Bearer <token>'"},
                status=401, headers={"WWW-Authenticate": "Bearer"})
    return await handler(request)


def make_app(service, server=None, *, token: str | None = None) -> web.Application:
    app = web.Application(middlewares=[_errors, _auth])
    app["service"] = service
    app["server"] = server
    app["token"] = token
    paths: dict = {}
    schemas: dict = {"Error": ERROR_SCHEMA}
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue      # not written yet
        app.router.add_routes(module.routes)
        paths.update(getattr(module, "PATHS", {}))
        schemas.update(getattr(module, "SCHEMAS", {}))
        setup = getattr(module, "setup", None)
        if setup is not None:
            setup(app)
    app["openapi"] = openapi_document(paths, schemas, secured=bool(token))
    app.router.add_get("/openapi.json", _openapi)
    return app


def openapi_document(paths: dict, schemas: dict, *, secured: bool = False) -> dict:
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "groupcoord admin API", "version": "1",
                 "description": "Inspect and change the emulated cluster and its consumer groups, "
                                "inject faults, follow events."},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
    return doc


async def _openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app["openapi"])


async def json_body(request: web.Request, schema_name: str = "body") -> dict:
    """The request's JSON object, or a 400."""
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_json", f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_body", f"the {schema_name} must be a JSON object")
    return body


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
