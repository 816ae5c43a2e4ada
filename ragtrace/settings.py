"""The earlier import path of the settings file's API; it lives in ``ragtrace.config``."""

from __future__ import annotations

import os

from ragtrace.config import (
    Config,
    EvaluationSettings,
    SettingsError,
    load_settings,
    settings_from_mapping,
)
from ragtrace.config.settings_file import FileLayer
from ragtrace.config.settings_file import read_file as _read_file

__all__ = [
    "EvaluationSettings",
    "SettingsError",
    "load_settings",
    "read_file",
    "settings_from_mapping",
]


def read_file(path: str | os.PathLike[str]) -> FileLayer:
    """The options a settings file sets (``ragtrace.config.settings_file.read_file``)."""
    return _read_file(path, Config)
