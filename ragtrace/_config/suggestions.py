"""The closest known name to a misspelt one, for messages: ``unknown key 'wrokers' (did you
mean 'workers'?)``. Every reader of names (settings keys, options, evaluators, columns) uses it,
so every typo is answered the same way."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


def suggest(
    word: str, options: Iterable[str], *, cutoff: float = 0.6, show: Callable[[str], str] = repr
) -> str:
    """`` (did you mean 'x'?)`` for the option closest to ``word``, written by ``show``, or
    ``""`` if none is as close as ``cutoff`` (``difflib``'s ratio)."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=cutoff)
    return f" (did you mean {show(close[0])}?)" if close else ""
