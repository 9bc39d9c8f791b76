"""The admin HTTP API, the live web page and the metrics endpoint (aiohttp).

:func:`~.app.make_app` builds the application for a running service; each module listed in
:data:`~.app.MODULES` contributes its routes (``routes``, an aiohttp ``RouteTableDef``) and
their OpenAPI description (``PATHS``, and ``SCHEMAS`` for shared components).
"""
