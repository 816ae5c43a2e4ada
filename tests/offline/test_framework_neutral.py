"""The offline tools and ``ragtrace.testing`` know no framework: they ask the adapters.

Every framework lives in its folder, ``ragtrace/integrations/<framework>/`` (capture and the
adapter ``ragtrace eval`` and ``ragtrace.testing.ask`` call its apps through); ``_offline`` and
``testing`` import none of them, nor the framework itself, anywhere (inside functions too), and
the adapters load without their framework.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from ragtrace.integrations import ADAPTERS

ROOT = Path(__file__).resolve().parent.parent.parent
NEUTRAL = ("_offline", "testing")
FRAMEWORK_FOLDERS = sorted(
    p.name for p in (ROOT / "ragtrace" / "integrations").iterdir() if (p / "__init__.py").exists()
)
FRAMEWORK_MODULES = ("langchain", "langchain_core", "langgraph", "llama_index")


def imported_names(source: str) -> Iterator[str]:
    """Every module a source imports: import statements anywhere (functions, ``if
    TYPE_CHECKING:`` blocks) and literal ``import_module`` / ``__import__`` names."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith(("import_module", "__import__"))
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def framework_imports(source: str) -> list[str]:
    """The imports of ``source`` that reach a framework or a framework's folder."""
    folders = tuple(f"ragtrace.integrations.{name}" for name in FRAMEWORK_FOLDERS)
    return sorted(
        {
            name
            for name in imported_names(source)
            if name.split(".")[0] in FRAMEWORK_MODULES
            or any(name == f or name.startswith(f + ".") for f in folders)
        }
    )


def test_the_checker_finds_a_framework_import_inside_a_function() -> None:
    source = (
        "def f():\n"
        "    from langchain_core.messages import AIMessage\n"
        "    import importlib\n"
        "    importlib.import_module('llama_index.core')\n"
        "from ragtrace.integrations import langchain\n"
        "from ragtrace.integrations._adapters import adapters\n"
    )
    assert framework_imports(source) == [
        "langchain_core.messages",
        "langchain_core.messages.AIMessage",
        "llama_index.core",
        "ragtrace.integrations.langchain",
    ]


def test_offline_and_testing_import_no_framework() -> None:
    found = {
        str(path.relative_to(ROOT)): names
        for part in NEUTRAL
        for path in sorted((ROOT / "ragtrace" / part).rglob("*.py"))
        if (names := framework_imports(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_every_framework_folder_has_a_listed_adapter() -> None:
    assert FRAMEWORK_FOLDERS == ["langchain", "llama_index"]
    assert sorted(spec.split(".")[2] for spec in ADAPTERS) == FRAMEWORK_FOLDERS
    for spec in ADAPTERS:
        module, _, attribute = spec.partition(":")
        assert module.endswith("._adapter") and attribute == "ADAPTER"


def test_the_adapters_and_a_plain_function_system_load_no_framework() -> None:
    code = (
        "import json, sys\n"
        "from ragtrace.integrations._adapters import adapters\n"
        "from ragtrace._offline.callables import make_system\n"
        "from ragtrace._offline.index import passage_text\n"
        "names = [a.name for a in adapters()]\n"
        "answer = make_system('f', lambda q: {'answer': q, 'contexts': ['c']}).ask('why?')\n"
        "print(json.dumps({'adapters': names, 'answer': answer.response,\n"
        "    'contexts': [c.text for c in answer.chunks], 'passage': passage_text(b'x').decode(),\n"
        "    'modules': sorted(sys.modules)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=ROOT,
    )
    found = json.loads(out.stdout)
    loaded = found.pop("modules")
    assert "ragtrace.integrations.llama_index._adapter" in loaded
    assert [m for m in loaded if m.split(".")[0] in FRAMEWORK_MODULES] == []
    assert found == {
        "adapters": ["langchain", "llama_index"],
        "answer": "why?",
        "contexts": ["c"],
        "passage": "x",
    }
