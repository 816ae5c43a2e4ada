"""ragtrace's configuration: one ``Config``, one precedence rule, every option declared once.

``Config.resolve(app="shop")`` builds it key by key: an explicit argument beats the
``RAGTRACE_<OPTION>`` environment variable, which beats the settings file (``config_file``,
read by ``ragtrace.config.settings_file``), which beats the default. Every option is declared
once, in ``ragtrace.config.declared``, with its default, checks, variable and settings key; the
options table of docs/configuration.md is made from those declarations (``options_table``).

Variables: booleans 1/0/true/false/yes/no/on/off; lists comma-separated. What each source does
with a bad value (``ConfigError``, a log line, ``SettingsError``): ``ragtrace.config.resolve``.

``load_settings(path)`` and ``settings_from_mapping(data)`` give one file's view as
``EvaluationSettings`` (``ragtrace.config.evaluation_settings``). That module builds evaluators
and a sampler, so it imports later parts of ragtrace: it is imported when one of its names is
first asked for, not with this package (which every part of ragtrace imports).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragtrace.config.declared import (
    EVALUATION_RESULTS,
    EVALUATION_SPAN_LAYOUTS,
    Config,
    Redactor,
)
from ragtrace.config.options import ENV_PREFIX, ConfigError, Option, option, options
from ragtrace.config.settings_file import DEFAULT_PROMETHEUS_PORT, SettingsError

if TYPE_CHECKING:
    from ragtrace.config.evaluation_settings import (
        EvaluationSettings,
        load_settings,
        settings_from_mapping,
    )

__all__ = [
    "DEFAULT_PROMETHEUS_PORT",
    "ENV_PREFIX",
    "EVALUATION_RESULTS",
    "EVALUATION_SPAN_LAYOUTS",
    "Config",
    "ConfigError",
    "EvaluationSettings",
    "Option",
    "Redactor",
    "SettingsError",
    "load_settings",
    "option",
    "options",
    "settings_from_mapping",
]

_EVALUATION_SETTINGS = ("EvaluationSettings", "load_settings", "settings_from_mapping")


def __getattr__(name: str) -> Any:
    if name in _EVALUATION_SETTINGS:
        module = importlib.import_module("ragtrace.config.evaluation_settings")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
