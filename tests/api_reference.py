"""docs/api.md, the API reference of the public surface, made from the docstrings.

For each public module (``SURFACE``), every name of its ``__all__``: its signature and the first
paragraph of its docstring. ``tests/test_api_reference.py`` checks the page is current; write it
again with::

    .venv/bin/python -m tests.api_reference --write
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import re
import sys
import types
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
            if is_type_alias(obj):
                parts.append(f"- `{attr}` (type): `{alias_text(obj)}`. {alias_doc(attr)}\n")
                continue
            kind = "class" if inspect.isclass(obj) else "" if callable(obj) else "value"
            shown = sorted(obj) if isinstance(obj, set | frozenset) else obj  # a stable order
            what = first_paragraph(obj) if kind != "value" else f"`{shown!r}`"
            title = f"`{attr}{signature(obj)}`" if kind != "value" else f"`{attr}`"
            parts.append(f"- {title}{' (class)' if kind == 'class' else ''}: {what}\n")
    return "".join(parts)


def is_type_alias(obj: object) -> bool:
    """A name for a type written with ``typing`` (``Callable[..., Evaluator]``, ``A | B``,
    ``Literal[...]``), not a class or function of its own."""
    return isinstance(obj, types.UnionType | types.GenericAlias) or (
        type(obj).__module__ == "typing" and hasattr(obj, "__origin__")
    )


def alias_text(obj: object) -> str:
    return re.sub(r"\b(?:typing|collections\.abc|ragtrace(?:\.\w+)*)\.", "", repr(obj))


def alias_doc(name: str) -> str:
    """The first paragraph of the string that follows ``name = ...`` in the ragtrace module
    that assigns it (the attribute docstring; Python keeps none at run time)."""
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if not (getattr(module, "__name__", "").startswith("ragtrace") and source):
            continue
        body = ast.parse(Path(source).read_text(encoding="utf-8")).body
        for statement, following in itertools.pairwise(body):
            targets = statement.targets if isinstance(statement, ast.Assign) else []
            assigns = any(isinstance(t, ast.Name) and t.id == name for t in targets)
            if (
                assigns
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
            ):
                text = str(following.value.value)
                return " ".join(text.split("\n\n", 1)[0].split())
    return ""


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        PAGE.write_text(render(), encoding="utf-8")
    else:
        sys.stdout.write(render())
