"""The settings file (YAML or TOML): one source of ``Config``, under code and the environment.

``Config.resolve`` (so ``ragtrace.init``) reads the file ``config_file`` names with
``read_file``, which returns only the options the file sets (a ``FileLayer``); code and
``RAGTRACE_*`` variables beat it key by key, and it beats the defaults. The file's keys are
the options' settings keys (the options table of docs/configuration.md). Every bad value is
reported in one ``SettingsError``, one line per mistake, naming the file, the key's path and
the fix::

    ragtrace.yaml: sampling.rules[1].acton: unknown key (did you mean 'action'?)
    ragtrace.yaml: pipeline.workers: must be >= 1, got 0

A key that is no option is logged with the closest option and ignored (the file may come from
a newer ragtrace); a key inside an option's value (a sampling rule, an evaluator entry) that it
does not know is an error, since the value would mean something else.

``load_settings("ragtrace.yaml")`` and ``settings_from_mapping(data)`` give one file's view as
``EvaluationSettings`` (built evaluators, a ``Sampler``, pipeline sizes; defaults for what it
does not say), for tools that read a file's evaluators (``ragtrace eval --config``).

A full YAML file (every section and key is optional; these are the defaults where one exists)::

    app: support-bot               # the name on spans, records and metrics (default: default)
    capture:                       # what is captured, and how much of it
      content: true                # put texts on spans (records keep them for evaluators)
      max_chunk_chars: 4000
      max_text_chars: 16000
      max_chunks: 50
      max_metadata_chars: 2000
      request_timeout_s: 600
      # query_keys, answer_keys, chunk_id_keys, chunk_score_keys: lists of names;
      # dedupe_prompt_chunks, direct_spans, max_open_requests: see the options table
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
                                   # shared_cache_mb: the processes' shared cache (default
                                   # 32; 0: off); passage_store: a file `ragtrace index` wrote
    sinks:
      prometheus: {port: 9464, addr: 127.0.0.1}   # true: these defaults; false/absent: off
      otel: true                   # evaluation results through OpenTelemetry: true (as
                                   # Config.evaluation_results says: log events by default),
                                   # false, or logs | spans | both | none
      evaluation_spans: evaluator  # when spans are written: or score, record
      otlp_endpoint: http://127.0.0.1:4318  # ragtrace's own OTLP/HTTP export (absent: none)
      phoenix: http://127.0.0.1:6006  # every score as a Phoenix span annotation (absent: off)
    queue: redis://127.0.0.1:6379/0  # absent: evaluate in this process. Set: the app only ships
                                   # records to this stream and `ragtrace worker` evaluates them;
                                   # or {url: ..., stream: ..., max_backlog: ...} (the options of
                                   # ragtrace.pipeline.queues.redis_options)
    shutdown_timeout_s: 5

The same in TOML uses ``[capture]``, ``[[evaluators]]``, ``[sampling]``, ``[[sampling.rules]]``,
``[[sampling.cascades]]``, ``[pipeline]`` and ``[sinks.prometheus]`` tables. Evaluator names
used under ``sampling`` must be configured under ``evaluators`` when the file has that section,
else among the evaluators code or the environment chose (a name that is not is logged).
"""

from __future__ import annotations

from typing import Any

from ragtrace.config.resolve import FileLayer, use_settings
from ragtrace.settings.loading import load_settings, read_file, settings_from_mapping
from ragtrace.settings.reader import check_value
from ragtrace.settings.schema import EvaluationSettings, SettingsError

__all__ = [
    "EvaluationSettings",
    "SettingsError",
    "load_settings",
    "read_file",
    "settings_from_mapping",
]


class _FileSettings:
    """What ``Config.resolve`` needs of this package (``ragtrace.config.resolve.Settings``)."""

    def read_file(self, path: str) -> FileLayer:
        return read_file(path)

    def check(self, name: str, value: Any) -> None:
        check_value(name, value)


use_settings(_FileSettings())
