"""Wrappers for a streamed answer's token generator: they end the request when reading ends.

LlamaIndex ends a query's span before its ``StreamingResponse`` is read and calls the LLM only
while the reader pulls tokens, from the reader's context, where that LLM call has no parent
span. ``relay`` (and ``relay_async``) lend the request to every span that starts while a token
is being pulled (``lent``), join the tokens, and call ``on_end(answer, error, abandoned)`` once
when the generator is exhausted, fails, or is closed early by its reader.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from contextvars import ContextVar
from typing import Any

StreamEnd = Callable[[str, BaseException | None, bool], None]
"""Called as ``on_end(joined answer, error or None, abandoned)``; must not raise."""

lent: ContextVar[Any] = ContextVar("ragtrace_llama_index_stream", default=None)
"""The request being streamed while a wrapped generator pulls its next token, else None."""


def relay(gen: Iterator[Any], owner: object, on_end: StreamEnd) -> Generator[Any, None, None]:
    """Yield ``gen``'s items, lending ``owner`` while each is pulled; report the end."""
    parts: list[str] = []
    try:
        while True:
            token = lent.set(owner)
            try:
                item = next(gen)
            except StopIteration:
                break
            finally:
                lent.reset(token)
            if isinstance(item, str):
                parts.append(item)
            yield item
    except GeneratorExit:
        on_end("".join(parts), None, True)
        close = getattr(gen, "close", None)
        if close is not None:
            close()
        raise
    except BaseException as exc:
        on_end("".join(parts), exc, False)
        raise
    on_end("".join(parts), None, False)


async def relay_async(
    gen: AsyncIterator[Any], owner: object, on_end: StreamEnd
) -> AsyncGenerator[Any, None]:
    """The async form of ``relay``."""
    parts: list[str] = []
    try:
        while True:
            token = lent.set(owner)
            try:
                item = await anext(gen)
            except StopAsyncIteration:
                break
            finally:
                lent.reset(token)
            if isinstance(item, str):
                parts.append(item)
            yield item
    except GeneratorExit:
        on_end("".join(parts), None, True)
        aclose = getattr(gen, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
        raise
    except BaseException as exc:
        on_end("".join(parts), exc, False)
        raise
    on_end("".join(parts), None, False)
