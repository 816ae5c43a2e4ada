"""docs/api.md, the API reference of the public surface, made from the docstrings.

For each public module (``SURFACE``), every name of its ``__all__``: its signature and the first
paragraph of its docstring. ``tests/test_api_reference.py`` checks the page is current; write it
again with::

    .venv/bin/python -m tests.api_reference --write
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api.md"
SURFACE = (
    "ragtrace",
    "ragtrace.integrations.langchain",
    "ragtrace.integrations.llama_index",
    "ragtrace.evaluators",
    "ragtrace.testing",
    "ragtrace.review",
    "ragtrace.demo.systems",
)
HEADER = """# API reference

The public surface of ragtrace: these modules and the names their `__all__` lists. Everything
else is internal and may change between releases. Made from the docstrings by
`tests/api_reference.py` (a test checks this page is current); the command line is documented
by `ragtrace --help` and the pages of [index.md](index.md). A type a public signature names is
importable from here too (a test checks): `ragtrace.init(score_sinks=[...])` takes objects
shaped as `ragtrace.ScoreSink`, which receive `ragtrace.Evaluation`s, and `pipeline_options=`
a `ragtrace.PipelineOptions`.
"""


def first_paragraph(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def signature(obj: object) -> str:
    if not callable(obj):
        return ""
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def render() -> str:
    parts = [HEADER]
    for name in SURFACE:
        module = importlib.import_module(name)
        parts.append(f"\n## `{name}`\n\n{first_paragraph(module)}\n")
        for attr in sorted(module.__all__, key=str.lower):
            obj = getattr(module, attr)
            kind = "class" if inspect.isclass(obj) else "" if callable(obj) else "value"
            shown = sorted(obj) if isinstance(obj, set | frozenset) else obj  # a stable order
            what = first_paragraph(obj) if kind != "value" else f"`{shown!r}`"
            title = f"`{attr}{signature(obj)}`" if kind != "value" else f"`{attr}`"
            parts.append(f"- {title}{' (class)' if kind == 'class' else ''}: {what}\n")
    return "".join(parts)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        PAGE.write_text(render(), encoding="utf-8")
    else:
        sys.stdout.write(render())
