"""Loading model backends: once per process, thread-safe, with clear errors for missing extras.

Every model-backed evaluator reaches its model through ``shared(key, build)``: the first caller
builds it (under a per-key lock, so two worker threads never load the same weights twice), later
callers get the same object. ``import_extra(module, extra)`` imports an optional dependency and,
when it is missing, raises ``MissingExtraError`` naming the ``pip install`` that fixes it.
``thread_count(threads)`` turns a configured thread count into the one a backend should use.
Files a backend derives once and keeps (converted models, an int8 copy) live under
``cache_dir()``; ``exclusive_lock(path)`` keeps two processes from deriving one at once.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")

CACHE_ENV = "RAGTRACE_CACHE_DIR"

DEFAULT_THREADS = 1
THREADS_ENV = "RAGTRACE_MODEL_THREADS"

_cache: dict[tuple[Any, ...], Any] = {}
_locks: dict[tuple[Any, ...], threading.Lock] = {}
_guard = threading.Lock()


class MissingExtraError(ImportError):
    """An optional dependency of a backend is not installed."""

    def __init__(
        self,
        module: str,
        extra: str,
        cause: BaseException | None = None,
        *,
        hint: str | None = None,
    ) -> None:
        self.module = module
        self.extra = extra
        detail = f" ({cause})" if cause is not None else ""
        fix = hint or f"pip install 'ragtrace[{extra}]'"
        super().__init__(f"{module!r} is not installed{detail}; install it with: {fix}")


def cache_dir() -> Path:
    """Where ragtrace keeps files it can rebuild (judge cache, joined model files, converted
    likelihood models): ``$RAGTRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragtrace``, else
    ``~/.cache/ragtrace``."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache"
    return Path(base).expanduser() / "ragtrace"


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (no lock where ``fcntl`` is missing: there the
    atomic rename of a finished file alone keeps readers safe)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def import_extra(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise ``MissingExtraError`` naming the ragtrace extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module, extra, exc) from exc


def shared(key: tuple[Any, ...], build: Callable[[], T]) -> T:
    """The process-wide object for ``key``, built by ``build()`` on first use (once, locked).

    A failed build is not cached: the next caller tries again and sees the same error.
    """
    try:
        return _cache[key]  # type: ignore[no-any-return]
    except KeyError:
        pass
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        if key not in _cache:
            _cache[key] = build()
        return _cache[key]  # type: ignore[no-any-return]


def forget(key_prefix: str | None = None) -> None:
    """Drop cached backends (all, or those whose key starts with ``key_prefix``)."""
    with _guard:
        for key in list(_cache):
            if key_prefix is None or (key and key[0] == key_prefix):
                del _cache[key]


def from_env(name: str, default: T, parse: Callable[[str], T], what: str) -> T:
    """``$name`` read by ``parse``, or ``default`` when it is unset or blank; a value ``parse``
    rejects raises ``ValueError`` saying the variable must be ``what``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError:
        raise ValueError(f"{name} must be {what}, got {raw!r}") from None


def thread_count(threads: int | None) -> int:
    """Threads a backend should use: ``threads``, else ``$RAGTRACE_MODEL_THREADS``, else 1.

    On the 2-core machines ragtrace targets, one thread per backend leaves the other core to
    the host application; raise it for a dedicated evaluation worker.
    """
    if threads is None:
        threads = from_env(THREADS_ENV, DEFAULT_THREADS, int, "a positive integer")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    return threads


def names_a_local_path(model: str | Path, suffixes: tuple[str, ...] = ()) -> bool:
    """Whether ``model`` (not found on disk) was meant as a local path, not a hub id: a
    ``Path``, an absolute or home- or dot-relative path, more than one ``/``, a backslash, or
    one of ``suffixes`` (lower case, e.g. ``(".gguf",)``)."""
    text = str(model).strip()
    return (
        isinstance(model, Path)
        or Path(text).expanduser().is_absolute()
        or text.startswith((".", "~"))
        or text.count("/") > 1
        or "\\" in text
        or text.lower().endswith(suffixes)
    )
