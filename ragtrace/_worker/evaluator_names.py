"""Evaluators named on a command line (``--evaluators a,b``), built with a fix in every error.

``--evaluators`` names evaluators; it cannot carry their options. An evaluator that needs one
(``tokens_presence`` needs ``constraints`` or ``expression``) refuses to start with a message
that names the option and says where to set it: the settings file given with ``--config``::

    evaluators = named_evaluators(("looping", "tokens_presence"))   # ValueError, with the fix
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrace import evaluators as registry
from ragtrace.evaluators._base import Evaluator

FLAG = "--evaluators"


def named_evaluators(names: Sequence[str], flag: str = FLAG) -> list[Evaluator]:
    """Each evaluator of ``names`` built with its default options.

    Raises:
        ValueError: A name no evaluator has (listing the known ones), or an evaluator that
            cannot be built without options (naming them, and how to give them).
    """
    built: list[Evaluator] = []
    for name in names:
        if name not in registry.names():
            raise ValueError(
                f"{flag}: unknown evaluator {name!r}; known: {', '.join(registry.names())}"
            )
        try:
            built.append(registry.create(name))
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"{flag} {name}: {exc}. {flag} only names evaluators; give {name!r} its "
                f"options in a settings file and start with --config FILE instead, e.g.\n"
                f"  evaluators:\n    - name: {name}\n      options: {{<option>: <value>}}\n"
                "(the options of each evaluator: docs/evaluators.md)"
            ) from None
    return built
