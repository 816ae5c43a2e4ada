"""A package's public names, each imported from its home module on first use (PEP 562).

A package that must not load something heavy or optional when it is imported (a framework, an
HTTP stack) lists where each public name lives and serves it on first use::

    __getattr__ = lazy_exports(__name__, {"instrument": "ragtrace.integrations.langchain.x"},
                               needs=("langchain_core", "... pip install 'ragtrace[langchain]'"))

``needs``: a module to import first (the framework) and the ``ImportError`` message, naming the
extra to install, when it is missing. A name the table lacks is an ``AttributeError``, as for
any module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str], *, needs: tuple[str, str] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``homes`` (name -> the module
    that defines it under that name) imported from its module when first asked for."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if needs is not None:
            required, missing = needs
            try:
                importlib.import_module(required)
            except ImportError as exc:
                raise ImportError(missing) from exc
        return getattr(importlib.import_module(home), name)

    return __getattr__
