"""``ragtrace alerts``: the Prometheus alert rules against recorded verdicts.

Modules, in the order data flows: ``verdicts`` (the verdicts file: timestamped scores, read and
written), ``rules`` (where the rule files live), ``series`` (verdicts -> the exporter's
counters, sampled every scrape), ``promtool`` (Prometheus's rule engine through ``promtool test
rules``: which alert changed state when), ``backtest`` (the changes -> alert episodes) and
``cli`` (``ragtrace alerts backtest``). Standard library and PyYAML only; promtool is
a separate binary.
"""
