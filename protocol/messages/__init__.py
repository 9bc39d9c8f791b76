"""Every API message we speak, declared once: one module per API, found here rather than listed.

Each module of this package that declares ``API`` (:func:`~groupcoord.protocol.schema.api`: the
key, the name and the fields) is an API; a new API is a new module, nothing else to edit (its
handler is a module of :mod:`groupcoord.coordinator.handlers`). ``APIS`` maps API keys to
:class:`~groupcoord.protocol.schema.Api`, in key order; ``BY_NAME`` maps names ("JoinGroup") to the
same objects; :class:`~groupcoord.protocol.api_keys.ApiKey` names the keys.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..schema import Api


def _found() -> dict[int, Api]:
    apis: dict[int, Api] = {}
    for info in pkgutil.iter_modules(__path__):
        api = getattr(importlib.import_module(f"{__name__}.{info.name}"), "API", None)
        if api is None:
            continue            # a module that declares no API (none today)
        if api.key in apis:
            raise ImportError(f"API key {api.key} declared twice: {apis[api.key].name} and {api.name}")
        apis[api.key] = api
    return dict(sorted(apis.items()))


APIS: dict[int, Api] = _found()
BY_NAME: dict[str, Api] = {a.name: a for a in APIS.values()}
if len(BY_NAME) != len(APIS):
    raise ImportError("two APIs of the same name")

__all__ = ["APIS", "BY_NAME"]
