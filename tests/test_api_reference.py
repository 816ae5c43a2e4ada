"""docs/api.md lists the public surface as its docstrings say today."""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

import ragtrace
from tests.api_reference import PAGE, ROOT, SURFACE, alias_definition, render


def test_the_api_page_is_current() -> None:
    """Rendered in a fresh interpreter (no test has imported or patched anything there)."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.api_reference"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout == PAGE.read_text(encoding="utf-8"), (
        "run: .venv/bin/python -m tests.api_reference --write"
    )


def test_every_public_name_is_on_the_page_with_its_docstring() -> None:
    page = render()
    for module in SURFACE:
        assert f"## `{module}`" in page
    assert "- `init(" in page and "- `create(" in page and "- `assert_scores(" in page
    assert "`RECORD_FIELDS`: `['chunks'," in page  # sets in a stable order
    # a type alias: as its module writes it, with the docstring below it
    assert '- `ToolStatus` (type): `Literal["ok", "error"]`: How an agent\'s tool call' in page
    assert "- `Redactor` (type): `Callable[[str], str]`: A redaction function" in page


def test_an_alias_is_shown_as_written_with_the_docstring_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "shades.py"
    path.write_text(
        "from typing import Literal, TypeAlias\n"
        'Shade = Literal["light",\n              "dark"]\n"""How dark a page is."""\n'
        'Ahead: TypeAlias = "int | Later"\n'
        "Bare = int | str\n",
        encoding="utf-8",
    )
    spec = importlib.util.spec_from_file_location("ragtrace._probe_shades", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "ragtrace._probe_shades", module)
    assert alias_definition("Shade", module.Shade) == (
        'Literal["light", "dark"]',
        "How dark a page is.",
    )
    assert alias_definition("Ahead", module.Ahead) == ("int | Later", "")
    assert alias_definition("Bare", module.Bare) == ("int | str", "")
    with pytest.raises(LookupError, match="Shade"):
        alias_definition("Shade", Literal["light"])


# -- public signatures name public types ------------------------------------------------------


def _public_objects() -> dict[int, str]:
    """``id(object)`` -> its public name, for every name of a public module's ``__all__``."""
    found = {}
    for name in SURFACE:
        module = importlib.import_module(name)
        for attr in module.__all__:
            found.setdefault(id(getattr(module, attr)), f"{name}.{attr}")
    return found


@functools.cache
def _imported_names(module: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, attribute)`` of every ``from ... import`` of a module, those under
    ``if TYPE_CHECKING:`` included (where annotation-only imports live)."""
    tree = ast.parse(inspect.getsource(sys.modules[module]))
    package = module if hasattr(sys.modules[module], "__path__") else module.rpartition(".")[0]
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{source}" if source else base
            for alias in node.names:
                found[alias.asname or alias.name] = (source, alias.name)
    return found


def _defined_in(obj: object, module: str) -> str:
    """The module a class or function says it lives in; for an alias (``Direction =
    Literal[...]``), which says nothing of its own, ``module`` where it was found."""
    return obj.__module__ if inspect.isclass(obj) or inspect.isroutine(obj) else module


def _home_of(name: str, modules: list[str]) -> tuple[str, object] | None:
    """Where ``name``, as written in an annotation of one of ``modules``, comes from: the
    module that defines it and the object; None when it is not ragtrace's."""
    for module in modules:
        imported = _imported_names(module).get(name)
        if imported is not None:
            source, attribute = imported
            if not source.startswith("ragtrace"):
                return None
            obj = getattr(importlib.import_module(source), attribute, None)
            return _defined_in(obj, source), obj
        obj = vars(sys.modules[module]).get(name)
        if obj is not None and not inspect.ismodule(obj):
            home = _defined_in(obj, module)
            return (home, obj) if home.startswith("ragtrace") else None
    return None


def private_types(obj: Any, public: dict[int, str]) -> set[str]:
    """The names in ``obj``'s signature of types that live in a private module (a part with a
    leading underscore, ``ragtrace._model``) and that no public module exports."""
    signature = inspect.signature(obj)
    owners = [c for c in getattr(obj, "__mro__", (obj,)) if c is not object]
    modules = [m for m in dict.fromkeys(o.__module__ for o in owners) if m in sys.modules]
    annotations = [p.annotation for p in signature.parameters.values()]
    written = [
        a if isinstance(a, str) else inspect.formatannotation(a)
        for a in [*annotations, signature.return_annotation]
        if a is not inspect.Signature.empty
    ]
    found = set()
    for annotation in written:
        for name in re.findall(r"\b([A-Za-z_]\w*)", re.sub(r"'[^']*'|\"[^\"]*\"", "", annotation)):
            home = _home_of(name, modules)
            if home is None or id(home[1]) in public:
                continue
            if any(part.startswith("_") for part in home[0].split(".")):
                found.add(name)
    return found


def public_members(cls: type) -> dict[str, Any]:
    """The methods and properties a user calls on ``cls``: those without a leading underscore
    that ragtrace's own classes define (not those inherited from another library's base)."""
    found: dict[str, Any] = {}
    for owner in reversed(cls.__mro__):
        if not owner.__module__.startswith("ragtrace"):
            continue
        for name, member in vars(owner).items():
            if name.startswith("_"):
                continue
            if isinstance(member, property) and member.fget is not None:
                found[name] = member.fget
            elif isinstance(member, staticmethod | classmethod):
                found[name] = member.__func__
            elif inspect.isfunction(member):
                found[name] = member
    return found


def test_public_signatures_name_only_public_types() -> None:
    public = _public_objects()
    named: dict[str, set[str]] = {}
    for module in SURFACE:
        imported = importlib.import_module(module)
        for attr in imported.__all__:
            obj = getattr(imported, attr)
            callables = {attr: obj} if callable(obj) else {}
            if inspect.isclass(obj):
                callables |= {f"{attr}.{n}": m for n, m in public_members(obj).items()}
            for where, target in callables.items():
                with contextlib.suppress(TypeError, ValueError):  # no signature (a C type)
                    for name in private_types(target, public):
                        named.setdefault(name, set()).add(f"{module}.{where}")
    exported = {n.rpartition(".")[2] for n in public.values()}
    assert {"init", "ScoreSink", "PipelineOptions", "Redactor", "ReviewStatsSource"} <= exported
    assert {n: sorted(w) for n, w in named.items()} == {}


def test_a_private_type_in_a_signature_is_found() -> None:
    from ragtrace._pipeline.queues import WorkQueue

    def takes_a_queue(queue: WorkQueue, sinks: Sequence[ragtrace.ScoreSink]) -> ragtrace.Score:
        raise NotImplementedError

    assert private_types(takes_a_queue, _public_objects()) == {"WorkQueue"}
    # ``init`` names ``Redactor``, an alias of a private module that ``ragtrace`` exports
    assert "Redactor" in str(inspect.signature(ragtrace.init))
    assert private_types(ragtrace.init, _public_objects()) == set()


# -- the public surface is the documented ``__all__`` -----------------------------------------


def _public_packages() -> list[str]:
    """Every package of ragtrace with no private part (``ragtrace.review``,
    ``ragtrace.integrations.langchain``...)."""
    found = []
    for init in sorted((ROOT / "ragtrace").rglob("__init__.py")):
        parts = init.parent.relative_to(ROOT).parts
        if not any(part.startswith("_") for part in parts):
            found.append(".".join(parts))
    return found


def test_every_public_package_and_documented_module_says_what_it_exports() -> None:
    modules = sorted(set(_public_packages()) | set(SURFACE))
    assert {"ragtrace", "ragtrace.integrations.langchain", "ragtrace.demo.systems"} <= set(modules)
    problems = {}
    for name in modules:
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        if exported is None:
            problems[name] = "no __all__"
        elif len(set(exported)) != len(exported):
            problems[name] = f"listed twice in __all__: {sorted(exported)}"
        elif missing := [n for n in exported if not hasattr(module, n)]:
            problems[name] = f"in __all__ but not in the module: {missing}"
    assert problems == {}


def documented_names(page: str) -> dict[str, set[str]]:
    """The names an API page documents, by module: the items (``- `name...```) under each
    ``## `module``` heading."""
    found: dict[str, set[str]] = {}
    names: set[str] | None = None
    for line in page.splitlines():
        if heading := re.fullmatch(r"## `([\w.]+)`", line):
            names = found.setdefault(heading.group(1), set())
        elif names is not None and (item := re.match(r"- `(\w+)", line)):
            names.add(item.group(1))
    return found


def test_the_documented_names_of_each_module_are_its_all() -> None:
    documented = documented_names(PAGE.read_text(encoding="utf-8"))
    assert set(documented) == set(SURFACE)
    differ = {}
    for module, names in documented.items():
        exported = set(importlib.import_module(module).__all__)
        if names != exported:
            differ[module] = {"undocumented": exported - names, "not exported": names - exported}
    assert differ == {}


def test_the_page_reader_finds_each_module_s_names() -> None:
    page = (
        "# API\n\n- `not_in_a_section`\n\n## `ragtrace`\n\nWhat it is.\n"
        "- `__version__`: `'0.1.0'`\n- `init(app: 'str') -> 'Ragtrace'`: Start.\n\n"
        "## `ragtrace.review`\n\n- `Label(verdict: 'str') -> None` (class): A verdict.\n"
    )
    assert documented_names(page) == {
        "ragtrace": {"__version__", "init"},
        "ragtrace.review": {"Label"},
    }
