"""Offline evaluation: the evaluators of the online pipeline, run over a data set.

``ragtrace eval --input records.jsonl --evaluators groundedness,looping --output scores.jsonl``
(see ``ragtrace._offline.cli``), ``ragtrace.evaluate(cases, evaluators)`` in code
(``ragtrace._offline.api``), or, lower down::

    from ragtrace._engine import EvaluationEngine
    from ragtrace.evaluators import create

    with EvaluationEngine([create("looping")]) as engine:
        outcomes = engine.run(records)          # one Outcome (scores, skips) per RagRecord

``EvaluationEngine`` (``ragtrace._engine``: batches, timeouts, error isolation, worker
processes) is the one engine every path shares.

Modules: ``records`` (JSON Lines -> RagRecord), ``reading`` (several inputs, ids unique per
system), ``systems`` (which system gave an answer), ``loop`` (the streaming loop, ``EvalLoop``),
``output`` (the scores file), ``summary`` (the table), ``classification_summary`` (the
classification report per system), ``selection`` (evaluators from names, options and
settings files), ``callables``, ``answers`` and ``asking`` (systems given as Python objects,
asked the questions; an app of a framework through its adapter, ``ragtrace.integrations``),
``perturb`` (question perturbations), ``flips`` (verdict flips), ``cli``; for
``ragtrace.evaluate``: ``api``, ``cases`` (test cases in code), ``results`` (what it returns),
``metrics_summary`` (what it prints), ``listeners`` (who hears its results).
"""
