"""Errors of the admin API: always a JSON body with a 4xx (or 5xx) status, never a traceback."""
from __future__ import annotations

from aiohttp import web


class ApiError(Exception):
    """Raise from a handler: answered as ``{"error": code, "message": message}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status)


#: OpenAPI schema of every error body
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "message"],
    "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
}
