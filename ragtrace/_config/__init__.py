"""ragtrace's configuration: one ``Config``, one precedence rule, every option declared once.

``Config.resolve(app="shop")`` builds it key by key: an explicit argument beats the
``RAGTRACE_<OPTION>`` environment variable, which beats the settings file (``config_file``,
read by ``ragtrace._config.settings_file``), which beats the default. Every option is declared
once, in ``ragtrace._config.declared``, with its default, checks, variable and settings key; the
options table of docs/configuration.md is made from those declarations (``options_table``).

Variables: booleans 1/0/true/false/yes/no/on/off; lists comma-separated. A bad value from any
source stops the start (``ConfigError``, or ``SettingsError`` for the file):
``ragtrace._config.resolve``.

The package imports nothing above itself and builds nothing: a settings file's evaluator
entries and ``sampling`` section are kept as checked values, which the runtime builds
(``ragtrace._runtime.evaluation_settings``); ``Config`` knows evaluators and samplers only by
small protocols (``EvaluatorLike``, ``SamplerLike``). One file's view as ``EvaluationSettings``
is ``ragtrace.load_settings(path)``.
"""

from __future__ import annotations

from ragtrace._config.declared import (
    EVALUATION_RESULTS,
    EVALUATION_SPAN_LAYOUTS,
    Config,
    Redactor,
)
from ragtrace._config.kinds import EvaluatorLike, SamplerLike
from ragtrace._config.options import ENV_PREFIX, ConfigError, Option, option, options
from ragtrace._config.settings_file import DEFAULT_PROMETHEUS_PORT, SettingsError

__all__ = [
    "DEFAULT_PROMETHEUS_PORT",
    "ENV_PREFIX",
    "EVALUATION_RESULTS",
    "EVALUATION_SPAN_LAYOUTS",
    "Config",
    "ConfigError",
    "EvaluatorLike",
    "Option",
    "Redactor",
    "SamplerLike",
    "SettingsError",
    "option",
    "options",
]
