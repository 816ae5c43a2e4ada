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


def _end(parts: list[str], on_end: StreamEnd, exc: BaseException | None) -> bool:
    """Report the end of a stream (``exc``: what stopped it early, if anything); True when its
    reader closed it (``GeneratorExit``), which the relay then passes on to ``gen``."""
    abandoned = isinstance(exc, GeneratorExit)
    on_end("".join(parts), None if abandoned else exc, abandoned)
    return abandoned


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
    except BaseException as exc:
        if _end(parts, on_end, exc) and (close := getattr(gen, "close", None)) is not None:
            close()
        raise
    _end(parts, on_end, None)


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
    except BaseException as exc:
        if _end(parts, on_end, exc) and (aclose := getattr(gen, "aclose", None)) is not None:
            with contextlib.suppress(Exception):
                await aclose()
        raise
    _end(parts, on_end, None)
