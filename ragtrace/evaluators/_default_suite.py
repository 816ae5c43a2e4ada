"""What ``ragtrace.init`` runs when no evaluators are configured, and the line that says why.

With the online suite's models installed (``pip install 'ragtrace[models]'``) the default is the
whole online suite (``registry.ONLINE_SUITE``), its model-backed evaluators held to
``DEFAULT_CPU_SHARE`` of one core (``Config.model_cpu_share``); without them, its lexical
members, which need no model. Whether the models are there is looked up without importing or
loading anything (the packages' folders are found, their files are checked when first used)::

    choice = default_evaluators()
    choice.names            # the evaluators to build
    choice.describe(0.25)   # "ragtrace: evaluating ... within 25% of one core; ..."
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ragtrace._backends._loading import MissingExtraError
from ragtrace._backends.model_files import folder_of, models
from ragtrace.evaluators._registry import ONLINE_SUITE

DEFAULT_CPU_SHARE = 0.25
"""Share of one core the default suite's model-backed evaluators may use."""
INSTALL_MODELS = "pip install 'ragtrace[models]'"
"""The command that installs what the online suite's models need."""
LEXICAL_MEMBERS: tuple[str, ...] = tuple(
    name for name in ONLINE_SUITE if name in {"looping", "sensitive_data", "pii_leakage"}
)
"""The members of the online suite that load no model (``pii_leakage``: its regexes, the
default; its NER is opt-in)."""
NEEDED_MODULES: dict[str, str] = {
    "numpy": "numpy",
    "onnxruntime": "onnxruntime",
    "tokenizers": "tokenizers",
}
"""Importable module -> package, for what the suite's default profile runs its models with."""
NEEDED_MODELS: tuple[str, ...] = ("minilm-int8-onnx", "minilm-safetensors", "py3langid")
"""The model packages it reads (keys of ``ragtrace._backends.model_files``): the int8 MiniLM,
the tokenizer of the MiniLM package, the language identifier."""


@dataclass(frozen=True)
class DefaultChoice:
    """The default evaluators and why.

    Attributes:
        names: The evaluators to build, in the suite's order.
        missing: Packages the online suite needs that were not found (empty: the whole suite).
        models_at: Where the first model package was found (None when one is missing).
    """

    names: tuple[str, ...]
    missing: tuple[str, ...]
    models_at: Path | None

    @property
    def whole_suite(self) -> bool:
        return not self.missing

    def describe(self, share: float | None, *, shipped: bool = False) -> str:
        """One log line: what runs, at what budget, and why (or how to get the rest).

        Args:
            share: The model-backed evaluators' share of one core (None or 0: no limit).
            shipped: Records are shipped to a queue and evaluated by ``ragtrace worker``
                processes, not here.
        """
        names = ", ".join(self.names)
        if not self.whole_suite:
            rest = ", ".join(n for n in ONLINE_SUITE if n not in self.names)
            return (
                f"ragtrace: evaluating with the online suite's lexical checks only ({names}): "
                "no evaluators were configured and the models of the rest "
                f"({rest}) are not installed (missing {', '.join(self.missing)}); "
                f"to run them: {INSTALL_MODELS}"
            )
        if shipped:
            where = "; records are shipped to the queue and evaluated by ragtrace worker processes"
        elif share:
            where = f", the model-backed ones within {share:.0%} of one core (model_cpu_share)"
        else:
            where = ", with no CPU limit"
        return (
            f"ragtrace: evaluating with the online suite ({names}){where}; no evaluators were "
            f"configured and its models were found in {self.models_at}"
        )


def default_evaluators() -> DefaultChoice:
    """The online suite when every package it needs is installed, else its lexical members."""
    missing = [dist for module, dist in NEEDED_MODULES.items() if not _importable(module)]
    first: Path | None = None
    for key in NEEDED_MODELS:
        model = models()[key]
        try:
            folder = folder_of(model)
        except MissingExtraError:
            missing.append(model.distribution)
        else:
            first = first or folder.parent
    if missing:
        return DefaultChoice(LEXICAL_MEMBERS, tuple(missing), None)
    return DefaultChoice(ONLINE_SUITE, (), first)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
