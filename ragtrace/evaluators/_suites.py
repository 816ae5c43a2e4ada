"""The online suite, built whole, with the options of a named profile.

``online_suite()`` builds ``registry.ONLINE_SUITE`` with default options. A profile trades
accuracy for cost where BENCHMARKS.md measured both:

- ``"default"``: every evaluator's defaults (the packaged MiniLM everywhere, NER over whole
  texts).
- ``"static"``: meant for cheaper cold records (the first sight of a passage), it no longer
  saves CPU since ``answer_relevance`` embeds the passages' sentences with MiniLM itself (kept
  for code that names it; docs/evaluators-online.md has the figures). ``context_relevance``,
  ``groundedness`` and ``faithfulness``'s similarity features embed with the packaged static
  embedder (``"wordllama"``: a token table, no network) instead of MiniLM, so a new chunk's
  sentences never go through a transformer; ``faithfulness`` then uses the weights fitted on
  that embedder's similarities. ``answer_relevance`` keeps MiniLM: the static embedder loses
  much of its accuracy. (``pii_leakage`` runs no NER by default, so the profile no longer
  narrows it; with ``ner=True`` pass ``ner_candidates_only=True`` in ``options``.)
  docs/evaluators-online.md ("Cheaper cold records: the static profile") gives what each change
  costs in accuracy.
- ``"select"``: the embedding evaluators embed only the passage sentences a lexical first stage
  keeps (``ragtrace.evaluators._sentence_selection``: the 3 best by BM25 per query and chunk, and
  per answer sentence or claim); the others count as unrelated. Opt-in:
  docs/decisions/sentence-selection.md has what it saves and what it moves.

``options`` adds or overrides options per evaluator, on top of the profile's::

    from ragtrace.evaluators._suites import online_suite
    ragtrace.init(evaluators=online_suite("static", options={"groundedness": {"threshold": 0.6}}))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtrace._backends.embeddings import STATIC_MODEL
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._registry import ONLINE_SUITE, create

# The ``select`` profile: passage sentences a lexical first stage keeps per query, chunk and
# answer sentence (``ragtrace.evaluators._sentence_selection``), for the evaluators that embed.
SELECT_PER_PROBE = 3
SELECTING = ("answer_relevance", "context_relevance", "groundedness", "faithfulness")

PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "default": {},
    "static": {
        "context_relevance": {"model": STATIC_MODEL},
        "groundedness": {"model": STATIC_MODEL},
        "faithfulness": {"embedding_model": STATIC_MODEL},
    },
    "select": {name: {"select_sentences": SELECT_PER_PROBE} for name in SELECTING},
}


def suite_options(
    profile: str = "default", options: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Evaluator name -> constructor options for every member of the online suite, in order.

    Raises:
        ValueError: An unknown profile, or options for an evaluator outside the suite.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    extra = dict(options or {})
    outside = sorted(set(extra) - set(ONLINE_SUITE))
    if outside:
        raise ValueError(
            f"options for {', '.join(outside)}, which is not in the online suite "
            f"({', '.join(ONLINE_SUITE)})"
        )
    chosen = PROFILES[profile]
    return {name: {**chosen.get(name, {}), **extra.get(name, {})} for name in ONLINE_SUITE}


def online_suite(
    profile: str = "default", options: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Evaluator]:
    """The online suite's evaluators, built with ``profile``'s options and ``options``.

    Raises:
        ValueError: See ``suite_options``; bad option values, from the evaluators themselves.
        MissingExtraError: A model the profile needs is not installed.
    """
    return [create(name, **opts) for name, opts in suite_options(profile, options).items()]
