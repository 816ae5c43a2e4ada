"""docs/api.md, the API reference of the public surface, made from the docstrings.

For each public module (``SURFACE``), every name of its ``__all__``: its signature and the first
paragraph of its docstring. ``tests/test_api_reference.py`` checks the page is current; write it
again with::

    .venv/bin/python -m tests.api_reference --write
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
import typing
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
by `ragtrace --help` and the pages of [index.md](index.md). A type that a public signature, or
a public method of a public class, names is importable from here too (a test checks):
`ragtrace.init(score_sinks=[...])` takes objects
shaped as `ragtrace.ScoreSink`, which receive `ragtrace.Evaluation`s, and `pipeline_options=`
a `ragtrace.PipelineOptions`. A type spelt as an alias (a `Literal` of the values a field takes,
a union) is listed as `Name` (type), with its definition as written.
"""


def first_paragraph(obj: object) -> str:
    return _first_paragraph(inspect.getdoc(obj) or "")


def _first_paragraph(doc: str) -> str:
    return " ".join(inspect.cleandoc(doc).split("\n\n", 1)[0].split())


def is_type_alias(obj: object) -> bool:
    """A type spelt as an alias (``Direction = Literal[...]``, ``Case = RagRecord | Mapping``,
    ``Redactor = Callable[[str], str]``), which has no signature and no docstring of its own."""
    return typing.get_origin(obj) is not None


@functools.cache
def _assignments(module: str) -> dict[str, tuple[str, str]]:
    """``name -> (expression as written, docstring)`` of a module's top-level assignments; the
    docstring is the string right below the assignment ("" when there is none)."""
    tree = ast.parse(source := inspect.getsource(sys.modules[module]))
    found = {}
    for node, after in zip(tree.body, [*tree.body[1:], None], strict=True):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        written = ast.get_source_segment(source, value) or ast.unparse(value)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            written = value.value  # a forward reference: ``X: TypeAlias = "A | B"``
        doc = ""
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            doc = after.value.value if isinstance(after.value.value, str) else ""
        found[target.id] = (" ".join(written.split()), doc)
    return found


def alias_definition(name: str, obj: object) -> tuple[str, str]:
    """How the alias ``name`` is written where it is defined, and its docstring.

    Raises:
        LookupError: No loaded ragtrace module assigns ``obj`` to ``name``.
    """
    for module in sorted(m for m in sys.modules if m.split(".")[0] == "ragtrace"):
        if vars(sys.modules[module]).get(name) is obj and name in _assignments(module):
            return _assignments(module)[name]
    raise LookupError(f"{name}: no ragtrace module defines it")


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
                written, doc = alias_definition(attr, obj)
                if not doc.strip():
                    raise ValueError(f"{name}.{attr}: write its docstring below its assignment")
                parts.append(f"- `{attr}` (type): `{written}`: {_first_paragraph(doc)}\n")
                continue
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
