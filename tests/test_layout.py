"""The package's shape: folders follow the flow, no import circle, documented paths import.

The flow (docs/architecture.md) is capture -> pipeline (sampling, queues, workers) -> evaluators
-> exporters, wired by the runtime, on a ground floor of records, configuration, vocabulary and
redaction. ``LAYERS`` ranks every top-level part of ``ragtrace``: a module may import its own
part or a lower one, never a higher one, so capture knows nothing of the pipeline, evaluators
nothing of exporters and the configuration nothing above itself. Every way one module comes to
run another's code counts as an arrow of the import graph:

- import statements, those under ``if TYPE_CHECKING:`` included;
- loads by name through ``importlib.import_module`` (a literal name, a name made from the
  package's own, or a table of ``module:attribute`` names) or through a table of home modules
  handed to ``ragtrace._lazy_exports``, an arrow to the module loaded;
- callbacks handed down at import: a module that, when imported, passes one of its functions
  (a lambda, or a function it defines) to a function of another ragtrace module makes that other
  module call back into it, an arrow from the receiver to the giver. This is how a lower part
  would reach a higher one without importing it; the test sees it as the upward arrow it is.

Loads by name follow the same rule as imports. The package root (``ragtrace/__init__.py``) is
the top floor and serves the public names of the parts below it lazily, by name: those loads go
down, so they are allowed like any downward import, and the root loads nothing else by name
(``test_the_root_loads_by_name_only_the_homes_of_its_public_names``).

Module size is left to judgement, not to a test: a module holds one concept (one client, one
evaluator family, one file format), and several hundred lines of one concept is fine. Split a
module when it holds two concepts, never to stay under a line count; merge modules that split
one concept (docs/decisions/cohesion-over-line-counts.md).
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ragtrace"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

LAYERS: dict[str, int] = {
    # the ground floor: the records, the configuration, the error counter, who may reach a
    # server, the attribute-name vocabulary and the text helpers everything shares
    "_model": 0,
    "_config": 0,
    "_diagnostics": 0,
    "_network": 0,
    "_semconv": 0,
    "_text": 0,
    "_lazy_exports": 0,
    # one redaction policy and the PII/secret detectors it masks with
    "_redaction": 1,
    # spans and one record per request
    "_capture": 2,
    # local models and the LLM-judge client, which evaluators call
    "_backends": 3,
    "_judges": 3,
    "evaluators": 4,
    # every Prometheus family, its registration and the /metrics endpoint
    "_metrics": 4,
    # the one evaluation engine every path scores records with
    "_engine": 5,
    "_exporters": 5,
    # the review queue's sink and the store it writes (``REVIEW_SINK``, below) sit with the
    # exporters, so the runtime builds it from ``Config.review_db`` like any other sink
    # submit -> sample -> queue -> workers -> sinks
    "_pipeline": 6,
    # builds the evaluators, sampler and sinks the configuration names, and runs them
    "_runtime": 7,
    # the framework integrations that feed capture
    "integrations": 8,
    # what a person runs
    "_offline": 9,
    "_worker": 9,
    # OTLP spans of other instrumentations -> records -> the runtime's pipeline
    "_ingest": 9,
    "review": 9,
    # scores files of `ragtrace eval` -> a leaderboard page and CI gates
    "_report": 9,
    # verdicts files -> the alert rules replayed through promtool -> alert episodes
    "_alerts": 9,
    "demo": 9,
    # `ragtrace config`: shows and checks what the runtime would start with
    "_config.command": 9,
    # assertions over test cases and the pytest plugin, on the offline engine and the report
    "testing": 10,
    "_cli": 10,
    # the public API (`ragtrace.init`, `ragtrace.evaluate`), served lazily by the parts below
    "__init__": 11,
    "__main__": 11,
}
REVIEW_SINK = (
    "_sink", "_store", "_sql_store", "_sqlite_store", "_postgres_store", "_sql", "_schema", "_pool",
    "_items", "_rules", "_queries", "_conversations", "_claims", "_label_store", "_agreement",
)  # fmt: skip
"""The modules of ``ragtrace.review`` the review sink needs: the sink, the rules that pick what
a person sees, and the SQLite and PostgreSQL stores. They import nothing above the exporters'
floor, and rank there; the rest of the package (pages, labels, calibration, the command line)
stays on the floor of what a person runs."""
LAYERS.update({f"review.{module}": LAYERS["_exporters"] for module in REVIEW_SINK})
MAX_TOP_LEVEL_MODULES = 8


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _part(module: str) -> str:
    """The ranked part a module belongs to: a module ``LAYERS`` names itself, else its
    top-level part of the package."""
    parts = module.split(".")
    for cut in range(len(parts), 2, -1):
        if (named := ".".join(parts[1:cut])) in LAYERS:
            return named
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, those under ``if TYPE_CHECKING:`` included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _strings(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """Every string of a module with the node that holds it: literals, and f-strings made of
    literals and module-level string constants (``f"{_E}.looping:LoopingDetection"``)."""
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found: list[tuple[str, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.value, node))
        elif isinstance(node, ast.JoinedStr):
            parts = [
                v.value
                if isinstance(v, ast.Constant)
                else constants.get(v.value.id, "")
                if isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
                else ""
                for v in node.values
            ]
            found.append(("".join(parts), node))
    return found


def _named_imports(module: str, tree: ast.Module) -> set[str]:
    """The ragtrace modules a module loads by name (``importlib.import_module``): a literal
    name; ``f"<package>.{home}"`` (each module of the package whose last part the module names
    in a string); a variable (every ``module:attribute`` string of the module and every
    ``(module, attribute)`` pair: tables of lazy names and registries); every module named in
    a module that calls ``lazy_exports`` (its table of home modules)."""
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")
    ]
    strings = _strings(tree)
    texts = {text for text, _ in strings}
    found: set[str] = set()
    for call in calls:
        arg = call.args[0] if call.args else None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.add(arg.value)
        elif isinstance(arg, ast.JoinedStr) and arg.values:
            head = arg.values[0]
            prefix = (
                f"{module}."
                if isinstance(head, ast.FormattedValue) and ast.unparse(head.value) == "__name__"
                else head.value
                if isinstance(head, ast.Constant) and isinstance(head.value, str)
                else ""
            )
            found |= {m for m in MODULES if prefix and m.startswith(prefix)
                      and m[len(prefix):] in texts}  # fmt: skip
        elif arg is not None:
            found |= {text.partition(":")[0] for text in texts if ":" in text}
            found |= {
                node.elts[0].value
                for node in ast.walk(tree)
                if isinstance(node, ast.Tuple)
                and len(node.elts) == 2
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
                and isinstance(node.elts[0], ast.Constant)
                and isinstance(node.elts[0].value, str)
            }
    lazy = any(
        isinstance(node, ast.Call) and ast.unparse(node.func).endswith("lazy_exports")
        for node in ast.walk(tree)
    )
    if lazy:  # a table of names -> their home modules, loaded on first use
        found |= {text for text in texts if text in MODULES}
    return {m for m in found if m in MODULES}


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The ragtrace modules an import statement loads by name (not their parent packages)."""
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    else:
        base = node.module or ""
        if node.level:
            is_package = MODULES[module].name == "__init__.py"
            anchor = module.split(".")[: len(module.split(".")) - node.level + is_package]
            base = ".".join([*anchor, base] if base else anchor)
        names = {f"{base}.{alias.name}" for alias in node.names} | {base}
        # `from pkg import name`: the name is a submodule or an attribute of pkg
        names = {n for n in names if n in MODULES} or {base}
        if {f"{base}.{a.name}" for a in node.names} & set(MODULES):
            names.discard(base)
    return {n for n in names if n in MODULES}


def _imported_names(module: str, tree: ast.Module) -> dict[str, str]:
    """Local name -> the ragtrace module it comes from, for the module's top-level imports:
    ``from ragtrace.x import f`` gives ``f -> ragtrace.x`` (or ``f -> ragtrace.x.f`` when that
    is a module), ``import ragtrace.x as m`` gives ``m -> ragtrace.x``."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            (base,) = _targets(module, ast.ImportFrom(node.module, [], node.level)) or {""}
            for alias in node.names:
                home = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                if home in MODULES:
                    names[alias.asname or alias.name] = home
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    names[alias.asname or alias.name.split(".")[0]] = alias.name
    return names


def _statements_at_import(tree: ast.Module) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported: its top level, and the blocks of
    its ``if``/``try``/``with`` statements there (not function bodies)."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, block, []):
                    todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])


def _callbacks(module: str, tree: ast.Module) -> set[str]:
    """The ragtrace modules a module hands one of its functions to at import (see the module
    docstring): each will call back into this module, an arrow from it to this module. A
    function is handed down by a call made for its effect alone (a statement whose result is
    not kept: the receiver keeps the function) with a lambda, or a function this module
    defines, as an argument, the callee being a function of another ragtrace module. A call
    whose result the module keeps (``wrapped = cached(load)``, a decorator) hands nothing down:
    the module calls what it got back itself."""
    imported = _imported_names(module, tree)
    own = {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }

    def home(func: ast.expr) -> str:
        """The ragtrace module the called function belongs to ("" if none)."""
        if isinstance(func, ast.Name):
            return imported.get(func.id, "")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return imported.get(func.value.id, "")
        return ""

    receivers: set[str] = set()
    for node in _statements_at_import(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            given = [*call.args, *(k.value for k in call.keywords)]
            if any(isinstance(a, ast.Lambda) or (isinstance(a, ast.Name) and a.id in own)
                   for a in given):  # fmt: skip
                receivers.add(home(call.func))
    return {r for r in receivers if r in MODULES and r != module}


def _edges(module: str, tree: ast.Module) -> set[str]:
    """The modules ``module`` imports or loads by name (arrows out of it)."""
    edges: set[str] = set()
    for node in _imports(tree):
        edges |= _targets(module, node)
    edges |= _named_imports(module, tree)
    edges.discard(module)
    return edges


def _graph() -> dict[str, set[str]]:
    """Every arrow between ragtrace's modules: imports, loads by name, and callbacks handed
    down at import (an arrow from the receiver back to the module that handed it)."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] |= _edges(module, tree)
        for receiver in _callbacks(module, tree):
            graph[receiver].add(module)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_every_part_has_a_layer() -> None:
    assert {_part(m) for m in MODULES} - set(LAYERS) == set()


def test_no_module_imports_a_later_part_of_the_flow() -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if LAYERS[_part(target)] > LAYERS[_part(module)]
    )
    assert wrong == []


def test_no_import_circle_between_modules() -> None:
    assert _cycle(_graph()) is None


def test_no_import_circle_between_parts() -> None:
    parts: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        parts.setdefault(_part(module), set()).update(
            _part(t) for t in targets if _part(t) != _part(module)
        )
    assert _cycle(parts) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


HANDS_DOWN = """
import importlib
from ragtrace._config import settings_file
from ragtrace._config.resolve import log_once
from ragtrace._config.settings_file import read_file

def _readers():
    return importlib.import_module("ragtrace._runtime.evaluation_settings")

settings_file.read_layer(lambda: importlib.import_module("ragtrace._runtime"))
if True:
    log_once(_readers)
kept = read_file(_readers)  # its result is kept: the module calls it itself, no arrow

def later():
    read_file(lambda: None)  # runs when called, not at import: no arrow
"""


def test_the_graph_sees_loads_by_name_and_callbacks_handed_down_at_import() -> None:
    """A root that hands the configuration a function which loads the runtime by name: the
    configuration now calls up into the root, a cycle through an upward arrow, which the graph
    sees though no import statement of the configuration names the root."""
    tree = ast.parse(HANDS_DOWN)
    assert _named_imports("ragtrace", tree) == {
        "ragtrace._runtime", "ragtrace._runtime.evaluation_settings"
    }  # fmt: skip
    assert _callbacks("ragtrace", tree) == {
        "ragtrace._config.settings_file", "ragtrace._config.resolve"
    }  # fmt: skip
    graph = {m: set(e) for m, e in _graph().items()}
    graph["ragtrace"] |= _edges("ragtrace", tree)
    for receiver in _callbacks("ragtrace", tree):
        graph[receiver].add("ragtrace")
    cycle = _cycle(graph)
    assert cycle is not None and "ragtrace" in cycle
    upward = {
        (m, t) for m, targets in graph.items() for t in targets
        if LAYERS[_part(t)] > LAYERS[_part(m)]
    }  # fmt: skip
    assert ("ragtrace._config.settings_file", "ragtrace") in upward


def test_the_root_loads_by_name_only_the_homes_of_its_public_names() -> None:
    """The one allowed kind of load by name at the root: the lazy exports of ``ragtrace``."""
    import ragtrace

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    homes = {module for module, _ in ragtrace._LAZY_NAMES.values()}
    assert _named_imports("ragtrace", tree) - {"ragtrace"} == homes  # itself: no arrow
    assert all(LAYERS[_part(home)] < LAYERS["__init__"] for home in homes)


def test_the_architecture_table_names_every_part_on_its_floor() -> None:
    """docs/architecture.md's package table: one row per floor of ``LAYERS``, naming every
    top-level part of the package on the floor this test gives it."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| [^|]+ \| ([^|]+) \|", text, re.M)
    assert rows, "the table was not found"
    floor_of = {
        name.strip("`/").removesuffix(".py"): int(floor)
        for floor, cell in rows
        for name in re.findall(r"`([^`]+)`", cell)
    }
    parts = {p.stem if p.suffix else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())}  # fmt: skip
    assert sorted(parts - set(floor_of)) == []
    ranks = sorted(set(LAYERS.values()))
    assert {p: floor_of[p] for p in parts} == {p: ranks.index(LAYERS[p]) for p in parts}


# -- docs/architecture.md names what exists ---------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Names the page gives that belong to other libraries (OpenTelemetry, prometheus_client).
FOREIGN_NAMES = {"Tracer", "TraceIdRatioBased", "CollectorRegistry"}
_PATH_TOKEN = re.compile(r"[\w.]+(?:/[\w.]*)+|[\w.]+\.py")
_MEMBER_TOKEN = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")
_NAME_TOKEN = re.compile(r"[A-Za-z_]\w*")
_DIAGRAM_NAMES = re.compile(r"(?<![\w./])(?:[\w.]+/[\w./]*|[A-Z]\w*\.\w+)")


def _architecture_names(text: str) -> set[str]:
    """The paths and names the page gives: each code span of the prose, and the paths and
    ``Class.method`` names of its diagrams; call parentheses, ``=`` and punctuation cut off."""
    fences = re.compile(r"^```[^\n]*\n(.*?)^```$", re.M | re.S)
    found = set(_DIAGRAM_NAMES.findall("\n".join(fences.findall(text))))
    found |= set(re.findall(r"`([^`\n]+)`", fences.sub("", text)))
    return {re.sub(r"\(.*\)$", "", n).rstrip("=,;:") for n in found}


@functools.cache
def _package_names() -> tuple[dict[str, set[str]], set[str]]:
    """``members``: for each class and each module (by its last name), the names defined in it
    (a class's include those of its bases in the package); ``known``: every identifier the
    package's code writes (definitions, arguments, attributes, string values)."""
    members: dict[str, set[str]] = {}
    bases: dict[str, set[str]] = {}
    known: set[str] = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
            names = members.setdefault(
                scope.name if isinstance(scope, ast.ClassDef) else module.rsplit(".", 1)[-1],
                set(),
            )
            for node in scope.body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(node.name)
                elif isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names |= {t.id for t in targets if isinstance(t, ast.Name)}
                elif isinstance(node, ast.ImportFrom):
                    names |= {a.asname or a.name for a in node.names}
            if isinstance(scope, ast.ClassDef):
                bases.setdefault(scope.name, set()).update(
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in scope.bases
                    if isinstance(b, ast.Name | ast.Attribute)
                )
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                known.add(node.name)
            elif isinstance(node, ast.Name | ast.arg | ast.keyword | ast.alias):
                known.add(getattr(node, "id", None) or getattr(node, "arg", None) or "")
                known.add(getattr(node, "asname", None) or getattr(node, "name", None) or "")
            elif isinstance(node, ast.Attribute):
                known.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                known.add(node.value)
    for name in list(bases):  # inherited members, through bases defined in the package
        seen, todo = set(), [name]
        while todo:
            if (base := todo.pop()) not in seen:
                seen.add(base)
                members[name] |= members.get(base, set())
                todo.extend(bases.get(base, ()))
    return members, known | set(members)


def _unknown(names: set[str]) -> list[str]:
    """The names of ``names`` that name no path, module, class member or identifier of the
    package (commands, metric series and URLs, which hold spaces, braces or a leading slash,
    are not names)."""
    members, known = _package_names()
    unknown = []
    for name in names:
        if re.search(r"[\s{}*]|^[/-]", name):
            continue
        if _PATH_TOKEN.fullmatch(name):
            relative = name.removeprefix("ragtrace/")
            if not ((PACKAGE / relative).exists() or (ROOT / name).exists()):
                unknown.append(name)
        elif name.startswith("ragtrace."):
            if not _resolves(name):
                unknown.append(name)
        elif _MEMBER_TOKEN.fullmatch(name):
            owner, member = name.split(".")
            if owner not in FOREIGN_NAMES and member not in members.get(owner, ()):
                unknown.append(name)
        elif _NAME_TOKEN.fullmatch(name) and name not in known | FOREIGN_NAMES:
            unknown.append(name)
    return sorted(unknown)


def test_the_architecture_page_names_only_what_exists() -> None:
    names = _architecture_names(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(names) >= 150, len(names)  # the parser found the page's names
    assert _unknown(names) == []


def test_a_renamed_path_or_name_on_the_architecture_page_is_found() -> None:
    page = """
```
LangChain callback   integrations/langchain/_handler.py   RagtraceCallbackHandler
submit               pipeline/pipeline.py                EvaluationPipeline.submit
  |-> Prometheus     _exporters/prometheus.py, review/_sink.py  PrometheusSink.flush
```
`_capture/tracker.py` calls `Capture.begin_request(run_id)` and `_capture/gone.py` calls
`Capture.begin_nothing`; `ragtrace.init` and `ragtrace.no_such_thing`, `raw_chunks` and
`_raw_chunks`, `processes=` and `no_such_option=`; `ragtrace worker` and `/livez` are not names.
"""
    names = _architecture_names(page)
    assert {"integrations/langchain/_handler.py", "review/_sink.py", "ragtrace worker"} <= names
    assert _unknown(names) == [
        "Capture.begin_nothing",
        "PrometheusSink.flush",
        "_capture/gone.py",
        "_raw_chunks",
        "no_such_option",
        "pipeline/pipeline.py",
        "ragtrace.no_such_thing",
    ]


def test_few_top_level_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


# Evaluator families of several modules, each one package whose docstring explains the family
# and names every module of it (docs/architecture.md, "Evaluators").
FAMILY_PACKAGES = ("_faithfulness", "_leakage")
# The modules each family was gathered from: none may come back beside the package.
FORMER_FAMILY_MODULES = (
    "clauses",
    "support",
    "support_models",
    "support_features",
    "support_response",
    "answer_markup",
    "_nli_support",
    "pii",
    "pii_patterns",
    "pii_candidates",
    "_leakage",
    "sensitive_data",
)


@pytest.mark.parametrize("family", FAMILY_PACKAGES)
def test_a_family_is_one_package_whose_docstring_names_its_modules(family: str) -> None:
    folder = PACKAGE / "evaluators" / family
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    assert len(modules) >= 3, modules  # the glob found the package
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
    assert doc and "the one place that explains the family" in doc
    assert sorted(m for m in modules if f"``{m}``" not in doc) == []


def test_no_family_module_is_left_beside_its_package() -> None:
    evaluators = PACKAGE / "evaluators"
    assert [m for m in FORMER_FAMILY_MODULES if (evaluators / f"{m}.py").exists()] == []


# -- documented import paths ------------------------------------------------------------------

_FROM_IMPORT = re.compile(r"^\s*from (ragtrace[\w.]*) import ([\w, ]+)$", re.M)
_IMPORT = re.compile(r"^\s*import (ragtrace[\w.]*)$", re.M)
_DOTTED = re.compile(r"`(ragtrace(?:\.\w+)+)`")
_NOT_PYTHON = re.compile(r"\.(ya?ml|toml|json|db)$")


def _documented() -> set[str]:
    """``module:name`` or ``module`` for every Python path the README and docs/ show."""
    found: set[str] = set()
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for module, names in _FROM_IMPORT.findall(text):
            found |= {f"{module}:{n.strip()}" for n in names.split(",") if n.strip()}
        found |= set(_IMPORT.findall(text))
        found |= {d for d in _DOTTED.findall(text) if not _NOT_PYTHON.search(d)}
    return found


def _resolves(path: str) -> bool:
    module, _, name = path.partition(":")
    if name:
        return hasattr(importlib.import_module(module), name)
    parts = module.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


# Span attribute, chunk metadata and metric names look like dotted paths in the docs but are
# not Python.
_NAMES_NOT_PATHS = re.compile(
    r"^ragtrace\.(evaluation|request|retrieval|retrievals|chunk|app|truncated|span|llm|content"
    r"|link|agent|conversation|context)\b"
)
_REVIEW_ATTRIBUTES = {"ragtrace.review.truncated"}


def test_every_documented_import_path_imports() -> None:
    paths = {
        p
        for p in _documented()
        if not _NAMES_NOT_PATHS.match(p) and p.split(":")[0] not in _REVIEW_ATTRIBUTES
    }
    assert len(paths) >= 15, sorted(paths)  # the parser found the docs' imports
    assert sorted(p for p in paths if not _resolves(p)) == []


# What the docs may import from: the public surface (each with ``__all__``), and the demo app
# that the docs' examples ask questions of.
SURFACE = ("ragtrace", "ragtrace.evaluators", "ragtrace.testing", "ragtrace.review")
SURFACE_PREFIXES = ("ragtrace.integrations.", "ragtrace.demo.systems")


def test_the_docs_import_only_the_public_surface() -> None:
    statements = {p.partition(":")[0] for doc in DOCS for p in _FROM_IMPORT.findall(
        doc.read_text(encoding="utf-8")) for p in [p[0]]} | {
        m for doc in DOCS for m in _IMPORT.findall(doc.read_text(encoding="utf-8"))}  # fmt: skip
    assert "ragtrace.testing" in statements  # the parser found the docs' imports
    assert sorted(m for m in statements
                  if m not in SURFACE and not m.startswith(SURFACE_PREFIXES)) == []  # fmt: skip
    for module in SURFACE:
        exported = importlib.import_module(module).__all__
        assert exported and all(hasattr(importlib.import_module(module), n) for n in exported)


def test_what_the_docs_import_is_in_its_module_all() -> None:
    """``from ragtrace.x import y`` in the README and docs/: ``y`` is in ``ragtrace.x.__all__``,
    the module's declared surface, not a name it happens to hold."""
    imported = [p.partition(":") for p in _documented() if ":" in p]
    assert len(imported) >= 15, imported  # the parser found the docs' imports
    outside = [f"{m}:{n}" for m, _, n in imported if n not in importlib.import_module(m).__all__]
    assert sorted(outside) == []


# The top-level parts users import; every other part of the package is internal and says so
# with a leading underscore (as httpx's ``_client`` or the OpenTelemetry SDK's ``_logs``).
PUBLIC_PARTS = {"__init__", "__main__", "evaluators", "integrations", "review", "testing", "demo"}


def test_every_top_level_part_but_the_public_ones_is_private() -> None:
    parts = {p.stem if p.suffix else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())}  # fmt: skip
    assert parts >= PUBLIC_PARTS
    assert sorted(p for p in parts - PUBLIC_PARTS if not p.startswith("_")) == []
    assert {m.split(".")[0] for m in SURFACE} == {"ragtrace"}
    assert {m.split(".")[1] for m in SURFACE[1:]} <= PUBLIC_PARTS


# The modules importable under a plain name: the public packages themselves, the demo app the
# docs' examples ask, and the pytest plugin's entry point. Every module that implements a public
# package is private by name (``ragtrace/evaluators/_faithfulness/``, ``review/_server.py``).
PLAIN_MODULES = {"ragtrace.demo.systems", "ragtrace.testing.plugin", "ragtrace.__main__"}
PLAIN_MODULES |= {"ragtrace.review.__main__"}  # ``python -m ragtrace.review``


def _plain_modules(package: Path) -> list[str]:
    """The modules under ``package`` (ragtrace's folder) with no private part in their name,
    packages counted by their ``__init__``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") and part != "__main__" for part in parts):
            found.append(".".join(parts))
    return found


def test_the_only_plain_modules_are_the_public_ones() -> None:
    plain = _plain_modules(PACKAGE)
    packages = [m for m in plain if (ROOT / m.replace(".", "/") / "__init__.py").exists()]
    assert {"ragtrace", "ragtrace.evaluators", "ragtrace.integrations.langchain"} <= set(packages)
    assert sorted(set(plain) - set(packages) - PLAIN_MODULES) == []
    assert sorted(PLAIN_MODULES - set(plain)) == []  # each exception still exists


def test_a_plain_module_inside_a_public_package_is_found(tmp_path: Path) -> None:
    package = tmp_path / "ragtrace"
    for name in ("__init__.py", "evaluators/__init__.py", "evaluators/_base.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("", encoding="utf-8")
    (package / "evaluators" / "helpers.py").write_text("", encoding="utf-8")
    (package / "_pipeline" / "sub").mkdir(parents=True)
    (package / "_pipeline" / "sub" / "plain.py").write_text("", encoding="utf-8")
    assert _plain_modules(package) == [
        "ragtrace",
        "ragtrace.evaluators",
        "ragtrace.evaluators.helpers",
    ]


def test_the_docs_examples_import_in_a_fresh_interpreter() -> None:
    """Run in a subprocess so no earlier test has imported the modules for us."""
    lines = sorted(
        f"from {m} import {n}" if n else f"import {m}"
        for m, _, n in (p.partition(":") for p in _documented())
        if n or m in MODULES
    )
    out = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr


def test_ci_runs_the_core_lane_on_tests_that_exist() -> None:
    """CI's core lane: ragtrace with only its langchain and llama-index extras (.ci/core-lane)."""
    lane = (ROOT / ".ci" / "core-lane").read_text(encoding="utf-8")
    assert "bash .ci/core-lane" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^core-test:\n\t.*bash \.ci/core-lane$", makefile, re.M)
    assert '".[langchain,llama-index]"' in lane
    listed = re.findall(r"^\s+(tests/\S+\.py)$", lane, re.M)
    assert "tests/test_core_lane.py" in listed and len(listed) == len(set(listed))
    assert [t for t in listed if not (ROOT / t).is_file()] == []


# -- the docs' map and their links ------------------------------------------------------------

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:")  # http:, https:, mailto:, ...
DOCS_DIR = ROOT / "docs"


def _local_links(page: Path) -> list[tuple[int, str]]:
    """``(line number, target without its #anchor)`` of every Markdown link to a local file
    outside fenced code blocks (links to an anchor of the same page are left out)."""
    found = []
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in _LINK.findall(line):
            path = target.split("#", 1)[0]
            if path and not _EXTERNAL.match(target):
                found.append((number, path))
    return found


def test_every_docs_page_is_on_the_index() -> None:
    index = DOCS_DIR / "index.md"
    linked = {(DOCS_DIR / target).resolve() for _, target in _local_links(index)}
    pages = {page.resolve() for page in [*DOCS_DIR.glob("*.md"), *DOCS_DIR.glob("decisions/*.md")]}
    pages -= {index.resolve()}
    assert len(pages) >= 10, pages  # the glob found the pages
    assert sorted(str(p.relative_to(ROOT)) for p in pages - linked) == [], "add them to the index"
    readme = {target for _, target in _local_links(ROOT / "README.md")}
    assert "docs/index.md" in readme, "the README links the docs' map"


def test_every_local_link_in_the_docs_resolves() -> None:
    pages = [ROOT / "README.md", *sorted(DOCS_DIR.rglob("*.md"))]
    links = [(page, number, target) for page in pages for number, target in _local_links(page)]
    assert len(links) >= 50, len(links)  # the parser found the links
    broken = [
        f"{page.relative_to(ROOT)}:{number}: {target}"
        for page, number, target in links
        if not (page.parent / target).exists()
    ]
    assert broken == []


# -- the repository around the package: no process artefacts, the benchmark suite ------------

BENCHMARKS = ROOT / "benchmarks"
MAX_BENCHMARK_FILES = 32
# Words of the project's own process, which mean nothing to a user: work-item numbers, ordinal
# "changes" of a diary, and paths to the folder beside the repository that no user's clone has.
PROCESS_ARTEFACT = re.compile(
    r"\bissue \d+|\.\./shared\b"
    r"|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))"
    r" change\b",
    re.IGNORECASE,
)


def _product_text_files() -> Iterator[Path]:
    """ragtrace/ (code and packaged data), docs/ and the README: what users read."""
    yield ROOT / "README.md"
    for folder in (PACKAGE, ROOT / "docs"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                yield path


def _benchmark_files() -> list[Path]:
    return [
        p
        for p in sorted(BENCHMARKS.rglob("*"))
        if p.is_file() and not {"results", "__pycache__"} & set(p.relative_to(BENCHMARKS).parts)
    ]


def test_the_process_artefact_pattern_finds_what_it_should() -> None:
    for text in ("see issue 22", "the Ninth change", "the 3rd change", "../shared/data"):
        assert PROCESS_ARTEFACT.search(text), text
    for text in ("llama.cpp issue #8942", "a work item", "a change of threshold"):
        assert not PROCESS_ARTEFACT.search(text), text


def test_no_process_artefacts_in_the_package_its_docs_or_the_readme() -> None:
    found = []
    for path in _product_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # packaged weights and other binary data
        for number, line in enumerate(text.splitlines(), 1):
            if match := PROCESS_ARTEFACT.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_every_benchmark_is_named_in_the_benchmarks_readme() -> None:
    readme = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted(BENCHMARKS.glob("*.py")) if f"`{p.name}`" not in readme]
    assert not missing, f"benchmarks/README.md does not name {missing}"


def test_the_benchmark_suite_stays_a_suite() -> None:
    files = _benchmark_files()
    assert len(files) <= MAX_BENCHMARK_FILES, [str(p.relative_to(BENCHMARKS)) for p in files]
