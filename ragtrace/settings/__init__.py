"""Evaluation settings as a file (YAML or TOML) or as a plain mapping in code.

``load_settings("ragtrace.yaml")`` reads a file; ``settings_from_mapping(data)`` takes the same
shape as a dict. Both return an ``EvaluationSettings`` with built evaluators and a ``Sampler``,
and raise ``SettingsError`` naming the file, the key's path and the fix::

    ragtrace.yaml: sampling.rules[1].acton: unknown key (did you mean 'action'?)

A full YAML file (every section and key is optional; these are the defaults where one exists)::

    evaluators:
      - name: looping              # any name ragtrace.evaluators.names() knows
        threshold: 0.6             # other keys go to the evaluator's constructor ...
      - name: tokens_presence
        options: {constraints: [cite]}  # ... or nested under `options`
      - groundedness               # a bare name: default options
      # - {suite: online, profile: static, options: {groundedness: {threshold: 0.6}}}
      #                            # the whole online suite (ragtrace.evaluators.suites)
      - name: judge_faithfulness
        cost_usd: 0.002            # estimate per evaluation, checked against hourly_budget_usd
        judge: {model: gpt-4o-mini, timeout_s: 30, concurrency: 8}  # any JudgeClient option;
                                   # absent: RAGTRACE_JUDGE_MODEL, else the local llama.cpp judge
    sampling:
      rate: 1.0                    # share of traces, decided by trace id
      evaluator_rates: {looping: 1.0}       # replaces `rate` for that evaluator
      rules:                       # first matching rule decides; `never` beats `always` below it
        - {action: always, status: [error]}
        - {action: never, route: healthcheck, name: healthcheck}
        - {action: always, top_score_below: 0.3, evaluators: [looping]}
        # other conditions: empty_retrieval, app, tenant, metadata: {k: v}, feedback
      rate_limits: {judge_faithfulness: 2}  # evaluations per second
      burst: {judge_faithfulness: 5}        # bucket size (default max(1, rate))
      hourly_budget_usd: 5         # spend per hour on judge evaluators (absent: unlimited)
      cascades:
        - {evaluator: judge_faithfulness, after: groundedness, low: 0.3, high: 0.7}
    pipeline: {queue_size: 10000, workers: 2, batch_wait_s: 0.05, processes: 0}
                                   # shared_cache_mb: the processes' shared cache (default:
                                   # RAGTRACE_SHARED_CACHE_MB, else 32; 0: off);
                                   # passage_store: a file `ragtrace index` wrote
    sinks:
      prometheus: {port: 9464, addr: 127.0.0.1}   # true: these defaults; false/absent: off
      otel: true                   # evaluation results through OpenTelemetry: true (as
                                   # Config.evaluation_results says: log events by default),
                                   # false, or logs | spans | both | none
      phoenix: http://127.0.0.1:6006  # every score as a Phoenix span annotation (absent: off)
    queue: redis://127.0.0.1:6379/0  # absent: evaluate in this process. Set: the app only ships
                                   # records to this stream and `ragtrace worker` evaluates them;
                                   # or {url: ..., stream: ..., max_backlog: ...} (the options of
                                   # ragtrace.pipeline.queues.redis_options)

The same in TOML uses ``[[evaluators]]``, ``[sampling]``, ``[[sampling.rules]]``,
``[[sampling.cascades]]``, ``[pipeline]`` and ``[sinks.prometheus]`` tables.
Evaluator names used under ``sampling`` must be configured under ``evaluators``.
"""

from __future__ import annotations

from ragtrace.settings.loading import load_settings, settings_from_mapping
from ragtrace.settings.schema import EvaluationSettings, SettingsError

__all__ = ["EvaluationSettings", "SettingsError", "load_settings", "settings_from_mapping"]
