"""The live web page of the admin listener: ``GET /`` and its static files.

The page (``web/index.html``, ``web/app.js``, ``web/style.css``: plain HTML, CSS and JS, no build)
reads the JSON endpoints (``/api/nodes``, ``/api/topics``, ``/api/groups``, ``/api/groups/{id}``,
``/api/transactions``, ``/api/events/recent``) and follows ``/api/events/stream``. Open transactions are
shown with their age against their timeout, partitions and pending offsets, and the last ones ended. Classic groups show their generations;
consumer groups (KIP-848) their group and assignment epochs, each member's epochs and reconciliation
state, and its target assignment against what it owns. ``GET /static/{file}`` serves only the
files of that folder, by name: anything else is a 404.
"""
from __future__ import annotations

from pathlib import Path

from aiohttp import web

from .errors import ApiError

WEB_DIR = Path(__file__).with_name("web")

CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}

#: the page loads nothing but its own files and the API of the same origin
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

routes = web.RouteTableDef()


def static_files() -> dict[str, Path]:
    """Name -> path of every servable file (regular files with a known type, no hidden ones)."""
    if not WEB_DIR.is_dir():
        return {}
    return {p.name: p for p in WEB_DIR.iterdir()
            if p.is_file() and not p.name.startswith(".") and p.suffix in CONTENT_TYPES}


def _serve(path: Path) -> web.Response:
    return web.Response(body=path.read_bytes(), content_type=CONTENT_TYPES[path.suffix], charset="utf-8",
                        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
                                 "Content-Security-Policy": CSP})


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    path = static_files().get("index.html")
    if path is None:
        raise ApiError(404, "not_found", "the web page is not installed (coordinator/admin/web/index.html)")
    return _serve(path)


@routes.get("/static/{file}")
async def static(request: web.Request) -> web.Response:
    name = request.match_info["file"]
    # a lookup by exact name in the folder's listing: no path is ever built from the request
    path = static_files().get(name)
    if path is None:
        raise ApiError(404, "not_found", f"no static file {name!r}")
    return _serve(path)


_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_TEXT_BODY = {"schema": {"type": "string"}}

PATHS = {
    "/": {"get": {
        "summary": "The live web page (HTML)",
        "operationId": "webPage",
        "tags": ["web"],
        "responses": {
            "200": {"description": "index.html", "content": {"text/html": _TEXT_BODY}},
            "404": {"description": "the page is not installed", "content": _ERROR},
        },
    }},
    "/static/{file}": {"get": {
        "summary": "A file of the web page (JS, CSS, SVG)",
        "operationId": "webStatic",
        "tags": ["web"],
        "parameters": [{"name": "file", "in": "path", "required": True,
                        "description": "a file name of the page's folder, e.g. app.js",
                        "schema": {"type": "string"}}],
        "responses": {
            "200": {"description": "the file, with its content type",
                    "content": {ctype: _TEXT_BODY for ctype in sorted(set(CONTENT_TYPES.values()))}},
            "404": {"description": "no such file", "content": _ERROR},
        },
    }},
}
