"""Settings from a YAML or TOML file, or from a mapping in code.

``read_file`` parses the file (refusing a key given twice, which YAML would silently let the
last one win) and returns the options it sets (``ragtrace.settings.reader``): what
``Config.resolve`` merges under code and the environment. ``load_settings`` and
``settings_from_mapping`` give one file's view as ``EvaluationSettings``::

    layer = read_file("ragtrace.yaml")          # FileLayer: only the keys the file names
    settings = load_settings("ragtrace.yaml")   # EvaluationSettings: defaults for the rest
"""

from __future__ import annotations

import importlib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragtrace.config.resolve import FileLayer, log_once
from ragtrace.settings.reader import read_layer
from ragtrace.settings.schema import EvaluationSettings, SettingsError


def load_settings(path: str | os.PathLike[str]) -> EvaluationSettings:
    """Read settings from a ``.yaml``/``.yml`` (PyYAML) or ``.toml`` file; keys it ignores are
    logged.

    Raises:
        SettingsError: The file cannot be read or parsed, or values are invalid (all listed).
    """
    return _as_settings(read_file(path))


def settings_from_mapping(data: Mapping[str, Any], source: str = "<dict>") -> EvaluationSettings:
    """Build settings from a mapping shaped like the file (config as code).

    Entries of ``evaluators`` may also be ``Evaluator`` instances.

    Raises:
        SettingsError: Values are invalid; each line names ``source`` and the key's path.
    """
    return _as_settings(read_layer(data, source))


def read_file(path: str | os.PathLike[str]) -> FileLayer:
    """The options a ``.yaml``/``.yml``/``.toml`` settings file sets, and what it ignored.

    Raises:
        SettingsError: The file cannot be read or parsed, or values are invalid (all listed).
    """
    source = os.fspath(path)
    suffix = Path(source).suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise SettingsError(f"{source}: unsupported file type {suffix!r}; use .yaml, .yml or .toml")
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{source}: cannot read the file: {exc}") from exc
    data = _parse_toml(text, source) if suffix == ".toml" else _parse_yaml(text, source)
    return read_layer({} if data is None else data, source)


def _as_settings(layer: FileLayer) -> EvaluationSettings:
    for message in layer.warnings:
        log_once(message)
    return EvaluationSettings.from_file_values(dict(layer.values))


def _parse_toml(text: str, source: str) -> object:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{source}: invalid TOML: {exc}") from exc


def _parse_yaml(text: str, source: str) -> object:
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        raise SettingsError(f"{source}: reading YAML needs PyYAML: pip install pyyaml") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _refuse_duplicate_keys(yaml, root, source, set())
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsError(f"{source}: invalid YAML: {exc}") from exc


def _refuse_duplicate_keys(yaml: Any, node: Any, source: str, seen_nodes: set[int]) -> None:
    if node is None or id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in keys:
                    line = key.start_mark.line + 1
                    raise SettingsError(f"{source}: line {line}: duplicate key {key.value!r}")
                keys.add(key.value)
            _refuse_duplicate_keys(yaml, value, source, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _refuse_duplicate_keys(yaml, item, source, seen_nodes)
