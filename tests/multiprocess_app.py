"""A small web app for the multi-process tests: gunicorn serves ``wsgi``, uvicorn ``asgi``.

Every worker process imports this module, so every worker calls ``ragtrace.init`` with the
same ``metrics_port`` (``MP_METRICS_PORT``) and app name (``MP_APP``), as an application
would. ``GET /ask`` answers
with a LangChain RAG chain traced by ragtrace (3 spans and one record per request; the
``looping`` evaluator scores each record) and says which process answered; ``GET /pid`` only
says which process it is. The ASGI app stops ragtrace in its lifespan's shutdown (uvicorn
ends a worker with SIGTERM's default action, which runs no ``atexit`` hook); under gunicorn
the exit hook does it. Everything else comes from the environment the test starts the
server with: ``PROMETHEUS_MULTIPROC_DIR`` (multiprocess mode, or not), ``RAGTRACE_OTLP_ENDPOINT``,
``RAGTRACE_SHUTDOWN_TIMEOUT_S``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import ragtrace
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.integrations.lc_app import fake_llm, rag_chain

APP = os.environ.get("MP_APP", "mp-app")
QUESTION = "When was the lighthouse built?"

rt = ragtrace.init(app=APP, metrics_port=int(os.environ["MP_METRICS_PORT"]), evaluators=["looping"])
chain = rag_chain(llm=fake_llm(repeat=100_000))
handler = RagtraceCallbackHandler(rt)


def answer(path: str) -> tuple[int, bytes]:
    """The status and body for ``path``."""
    if path == "/pid":
        return 200, f"{os.getpid()}\n".encode()
    if path == "/ask":
        text = chain.invoke(QUESTION, config={"callbacks": [handler]})
        return 200, f"{os.getpid()} {text}\n".encode()
    return 404, b"not found\n"


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    status, body = answer(environ.get("PATH_INFO", ""))
    start_response(
        f"{status} {'OK' if status == 200 else 'Not Found'}", [("Content-Type", "text/plain")]
    )
    return [body]


Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def asgi(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # uvicorn ends its workers by re-raising SIGTERM, so no atexit hook runs there:
                # the lifespan's shutdown is where an ASGI app stops ragtrace.
                rt.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    status, body = answer(scope["path"])
    headers = [(b"content-type", b"text/plain")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
