"""ragtrace's configuration: one ``Config``, one precedence rule, every option declared once.

``Config.resolve(app="shop")`` builds it key by key: an explicit argument beats the
``RAGTRACE_<OPTION>`` environment variable, which beats the settings file (``config_file``,
read by ``ragtrace.settings``), which beats the default. Every option is declared once, in
``ragtrace.config.declared``, with its default, checks, variable and settings key; the options
table of docs/configuration.md is made from those declarations (``options_table``).

Variables: booleans 1/0/true/false/yes/no/on/off; lists comma-separated. A bad explicit value
raises ``ConfigError`` (a ``ValueError``) naming the option and the value; a bad variable is
logged once and ignored; an unknown ``RAGTRACE_*`` variable is logged with the closest name.
"""

from __future__ import annotations

from ragtrace.config.declared import (
    DEFAULT_PROMETHEUS_PORT,
    EVALUATION_RESULTS,
    EVALUATION_SPAN_LAYOUTS,
    Config,
    Redactor,
)
from ragtrace.config.options import ENV_PREFIX, ConfigError, Option, option, options

__all__ = [
    "DEFAULT_PROMETHEUS_PORT",
    "ENV_PREFIX",
    "EVALUATION_RESULTS",
    "EVALUATION_SPAN_LAYOUTS",
    "Config",
    "ConfigError",
    "Option",
    "Redactor",
    "option",
    "options",
]
