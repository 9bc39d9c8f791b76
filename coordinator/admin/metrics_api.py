"""GET /metrics: the service's Prometheus metrics (see :mod:`groupcoord.coordinator.metrics`).

:func:`setup` gives the admin app a :class:`~groupcoord.coordinator.metrics.Metrics`
(``app["metrics"]``), attached to the service when the app starts and detached when it is cleaned
up, so a service without an admin listener pays nothing for metrics. The app's live event stream
(admin/events_api.py) adds ``groupcoord_event_stream_clients`` and
``groupcoord_event_stream_dropped_clients_total``.
"""
from __future__ import annotations

import asyncio

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

from ..metrics import Metrics

routes = web.RouteTableDef()


@routes.get("/metrics")
async def metrics(request: web.Request) -> web.Response:
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    snapshot = request.app["metrics"].snapshot()        # the service's state, read on its loop
    body = await asyncio.get_running_loop().run_in_executor(None, encoder, snapshot)
    return web.Response(body=body, headers={"Content-Type": content_type})


def _event_stream_families(hub):
    def families():
        yield GaugeMetricFamily("groupcoord_event_stream_clients", "Clients following the live event stream.",
                                value=len(hub.clients))
        yield CounterMetricFamily("groupcoord_event_stream_dropped_clients", "Event stream clients dropped "
                                  "for falling behind.", value=hub.dropped)
    return families


def setup(app: web.Application) -> None:
    m = Metrics(app["service"], app["server"])
    app["metrics"] = m
    hub = app.get("events")        # admin/events_api.py, set up before this module
    if hub is not None:
        m.extra.append(_event_stream_families(hub))

    async def _attach(app: web.Application) -> None:
        m.attach()      # on the service's loop, when the listener starts

    async def _detach(app: web.Application) -> None:
        m.detach()

    app.on_startup.append(_attach)
    app.on_cleanup.append(_detach)


PATHS = {
    "/metrics": {
        "get": {
            "summary": "Prometheus metrics",
            "description": "Groups by protocol and state (classic and consumer groups), members, rebalances "
                           "and their duration, consumer groups' epoch bumps, join and sync time, "
                           "heartbeats, offset commits, transactions by state and result, fenced producers, pending "
                           "transactional offsets, unstable partitions, errors by code, connections, requests by API and "
                           "version, in Prometheus' text exposition format (OpenMetrics when the Accept "
                           "header asks for it). Metric names follow Kafka's, prefixed `groupcoord_`.",
            "tags": ["metrics"],
            "responses": {
                "200": {"description": "the metrics",
                        "content": {"text/plain": {"schema": {"type": "string"}}}},
            },
        },
    },
}
