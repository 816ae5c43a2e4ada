"""The demo's evaluators, in one place: ragtrace's defaults plus a contact-details check.

``demo_evaluators()`` builds ragtrace's default evaluators (``Config.evaluators``, the ones
``ragtrace.init`` runs when given none: looping detection) with their default options, and
``tokens_presence`` configured to fail an answer that contains an email address or a phone
number (the demo model sometimes leaks one).
"""

from __future__ import annotations

from typing import Any

from ragtrace.config import Config
from ragtrace.evaluators import Evaluator, create

EMAIL = r"[\w.+-]+@[\w-]+\.[\w.-]+"
PHONE = r"\+\d[\d ]{7,}\d"

# name -> options for ``ragtrace.evaluators.create``; defaults first, with no options.
DEMO_EVALUATORS: dict[str, dict[str, Any]] = {
    **{name: {} for name in Config.evaluators},
    "tokens_presence": {
        "expression": f'NOT "REGEXP:{EMAIL}" AND NOT "REGEXP:{PHONE}"',
        "targets": ("answer",),
    },
}


def demo_evaluators() -> list[Evaluator]:
    """Build the demo's evaluators (see ``DEMO_EVALUATORS``)."""
    return [create(name, **options) for name, options in DEMO_EVALUATORS.items()]
