"""``ragtrace report``: leaderboards, comparisons and findings from ``ragtrace eval`` scores files.

Modules, in the order data flows: ``load`` (scores files -> rows and answer lines, bad lines
counted), ``groups`` (rows per score, system and case; what each system has for each case),
``basis`` (the cases a score compares its systems on; unanswered cases), ``stats`` (bootstrap
and Wilson intervals), ``findings`` (problems and insights), ``examples`` (worst answers and
their claims), ``answers`` (unanswered cases, latency and cost per system),
``failure_sources`` (retrieval versus generation failures), ``classification`` (the
classification leaderboard), ``build`` (the report as JSON-ready data), ``svg``,
``html_format``, ``html_score``, ``html_systems`` and ``html`` (the self-contained page),
``gates`` (``--fail-if``) and ``cli``. Standard library only (the classification figures come
from ``ragtrace.evaluators._classification_metrics``, pure Python too).
"""

from __future__ import annotations
