"""A RAG app behind a gateway that propagates ``traceparent``, both real WSGI servers on loopback:
run it in the peers' environment (``.venv-bench``)::

    .venv-bench/bin/python tests/ingest/peer_gateway.py --instrumentation openinference \\
        --framework langchain --endpoint http://127.0.0.1:4318/v1/traces --requests 3

The app (``peer_app.instrumented_app``: the peer's real instrumentation, exporting OTLP/HTTP to
``--endpoint`` as each span ends) serves ``POST /ask``, taking the trace context from the
request's ``traceparent`` header as a web framework's instrumentation would. The gateway serves
``POST /ask`` too: it opens its own server span (on a provider of its own, whose spans go
elsewhere and never reach ``--endpoint``) and forwards the request to the app with that span's
``traceparent``. So the app's outermost span has a remote parent that ingest never sees.

Each request goes user -> gateway -> app. One JSON line per request is printed: the trace id,
the gateway's span id, the question, and the wall time (``time.time()``) the answer came back.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_app import FRAMEWORKS, INSTRUMENTATIONS, instrumented_app

StartResponse = Callable[..., Any]


class Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""


def serve(app: Callable[[dict[str, Any], StartResponse], Iterable[bytes]]) -> tuple[Any, int]:
    """``app`` on a free loopback port, on a daemon thread; ``(server, port)``."""
    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_port


def rag_app(ask: Callable[[str], Any]) -> Callable[[dict[str, Any], StartResponse], list[bytes]]:
    """The app: ``POST /ask`` with ``{"question"}``, answered under the caller's trace."""
    from opentelemetry import context, propagate

    def app(environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        carrier = {
            key[5:].lower().replace("_", "-"): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        size = int(environ.get("CONTENT_LENGTH") or 0)
        question = json.loads(environ["wsgi.input"].read(size))["question"]
        token = context.attach(propagate.extract(carrier))
        try:
            answer = ask(question)
        finally:
            context.detach(token)
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"answer": str(answer)}).encode()]

    return app


def gateway(upstream: str) -> Callable[[dict[str, Any], StartResponse], list[bytes]]:
    """The gateway: its own span per request, ``traceparent`` passed on to ``upstream``."""
    from opentelemetry import propagate
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import SpanKind

    tracer = TracerProvider().get_tracer("gateway")  # its spans go elsewhere, not to ingest

    def app(environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(size)
        with tracer.start_as_current_span("POST /ask", kind=SpanKind.SERVER) as span:
            headers = {"Content-Type": "application/json"}
            propagate.inject(headers)
            request = urllib.request.Request(upstream, data=body, headers=headers)
            answer = urllib.request.urlopen(request, timeout=60).read()
            ids = span.get_span_context()
        reply = json.loads(answer)
        reply["trace_id"] = format(ids.trace_id, "032x")
        reply["gateway_span_id"] = format(ids.span_id, "016x")
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(reply).encode()]

    return app


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instrumentation", choices=INSTRUMENTATIONS[:2], required=True)
    parser.add_argument("--framework", choices=FRAMEWORKS, required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--service", default="peer-app")
    args = parser.parse_args()
    import _overhead_apps as apps
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": args.service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=args.endpoint)))
    ask, _ = instrumented_app(args.instrumentation, args.framework, provider)
    app_server, app_port = serve(rag_app(ask))
    gw_server, gw_port = serve(gateway(f"http://127.0.0.1:{app_port}/ask"))
    try:
        for n in range(args.requests):
            question = apps.query(n)
            request = urllib.request.Request(
                f"http://127.0.0.1:{gw_port}/ask",
                data=json.dumps({"question": question}).encode(),
                headers={"Content-Type": "application/json"},
            )
            reply = json.loads(urllib.request.urlopen(request, timeout=60).read())
            reply.update(question=question, answered_at=time.time())
            print(json.dumps(reply), flush=True)
    finally:
        gw_server.shutdown()
        app_server.shutdown()
        provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
