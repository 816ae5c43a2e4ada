"""``ragtrace report``: leaderboards, comparisons and findings from ``ragtrace eval`` scores files.

::

    ragtrace report scores.jsonl --html report.html --json report.json \\
        --fail-if 'faithfulness.pass_rate < 0.9'

Modules, in the order data flows: ``load`` (scores files -> rows, bad lines counted),
``groups`` (rows per score, system and case), ``stats`` (bootstrap intervals), ``findings``
(problems and insights), ``examples`` (worst answers and their claims), ``build`` (the report
as JSON-ready data), ``svg`` and ``html`` (the self-contained page), ``gates`` (``--fail-if``)
and ``cli``. Standard library only.
"""

from __future__ import annotations
