"""The settings file (YAML or TOML): one source of ``Config``, under code and the environment.

``Config.resolve`` (so ``ragtrace.init``) reads the file ``config_file`` names with
``read_file``, which returns only the options the file sets (a ``FileLayer``); code and
``RAGTRACE_*`` variables beat it key by key, and it beats the defaults. The file's keys are
the options' settings keys (the options table of docs/configuration.md): an option declared
with ``file="pipeline.workers"`` is the key ``workers`` of the section ``pipeline``. Values are
checked exactly as ``Config`` checks them, so a file can hold nothing a ``Config`` would
refuse. Every bad value is reported in one ``SettingsError``, one line per mistake, naming the
file, the key's path and the fix::

    ragtrace.yaml: sampling.rules[1].acton: unknown key (did you mean 'action'?)
    ragtrace.yaml: pipeline.workers: must be >= 1, got 0

A key that is no option is logged with the closest option and ignored (the file may come from
a newer ragtrace); a key inside an option's value (a sampling rule, an evaluator entry) that it
does not know is an error, since the value would mean something else. YAML that gives a key
twice is refused (YAML alone would let the last one win silently).

Most values are read by their option's kind. Two sections name objects that later parts of
ragtrace build: ``evaluators`` (a list of names and entries) and ``sampling`` (the ``sampler``
option) are kept as the file writes them, checked for their shape here (a list; a mapping of
known keys) and built, with every check of their contents, by the runtime
(``ragtrace._runtime.evaluation_settings``) when it starts; ``Config.resolve`` alone does not
build them. The ``queue`` key is read here whole: a ``redis://`` URL, or a mapping of ``url``
and any option of the Redis queue (``ragtrace._config.redis_queue``)::

    queue: redis://redis.internal:6379/0
    queue: {url: "redis://redis.internal:6379/0", stream: "support:work", max_backlog: 50000}

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
    evaluators:                    # absent: the online suite (its lexical checks without
                                   # its models), logged at start
      - name: looping              # any name ragtrace.evaluators.names() knows
        threshold: 0.6             # other keys go to the evaluator's constructor ...
      - name: tokens_presence
        options: {constraints: [cite]}  # ... or nested under `options`
      - groundedness               # a bare name: default options
      # - {suite: online, profile: static, options: {groundedness: {threshold: 0.6}}}
      #                            # the whole online suite (ragtrace.evaluators._suites)
      - name: judge_faithfulness
        cost_usd: 0.002            # estimate per evaluation, checked against hourly_budget_usd
        judge: {model: gpt-4o-mini, timeout_s: 30, concurrency: 8}  # any JudgeClient option;
                                   # absent: RAGTRACE_JUDGE_MODEL, else the local llama.cpp judge
    sampling:
      rate: 1.0                    # share of traces, decided by trace id
      by: trace                    # or session: whole conversations, decided by session id
      evaluator_rates: {looping: 1.0}       # replaces `rate` for that evaluator
      rules:                       # first matching rule decides; `never` beats `always` below it
        - {action: always, status: [error]}
        - {action: never, route: healthcheck, name: healthcheck}
        - {action: always, top_score_below: 0.3, evaluators: [looping]}
        - {action: always, after_failure: true}   # a session's turns after a failed one
        # other conditions: empty_retrieval, app, tenant, metadata: {k: v}, feedback
      failed_sessions: {max_sessions: 10000, ttl_s: 1800, max_turns: 20}  # that memory
      rate_limits: {judge_faithfulness: 2}  # evaluations per second
      burst: {judge_faithfulness: 5}        # bucket size (default max(1, rate))
      hourly_budget_usd: 5         # spend per hour on judge evaluators (absent: unlimited)
      cascades:
        - {evaluator: judge_faithfulness, after: groundedness, low: 0.3, high: 0.7}
    pipeline: {queue_size: 10000, workers: 2, batch_wait_s: 0.05, processes: 0}
                                   # shared_cache_mb: the processes' shared cache (default
                                   # 32; 0: off); passage_store: a file `ragtrace index` wrote;
                                   # model_cpu_share: the model-backed evaluators' share of
                                   # one core (absent: 0.25 with the default evaluators)
    sinks:
      prometheus: {port: 9464, addr: 127.0.0.1}   # true: these defaults; false/absent: off
      otel: true                   # evaluation results through OpenTelemetry: true (as
                                   # Config.evaluation_results says: log events by default),
                                   # false, or logs | spans | both | none
      evaluation_spans: evaluator  # when spans are written: or score, record
      otlp_endpoint: http://127.0.0.1:4318  # ragtrace's own OTLP/HTTP export (absent: none)
      phoenix: http://127.0.0.1:6006  # every score as a Phoenix span annotation (absent: off)
      review: review.db            # the review queue's store, or postgresql://... (absent: off)
      custom: [mypackage.sinks:AuditSink]  # your own sinks, built with no arguments
    queue: redis://127.0.0.1:6379/0  # absent: evaluate in this process. Set: the app only ships
                                   # records to this stream and `ragtrace worker` evaluates them;
                                   # or {url: ..., stream: ..., max_backlog: ...} (the options of
                                   # ragtrace._config.redis_queue)
    shutdown_timeout_s: 5

The same in TOML uses ``[capture]``, ``[[evaluators]]``, ``[sampling]``, ``[[sampling.rules]]``,
``[[sampling.cascades]]``, ``[pipeline]`` and ``[sinks.prometheus]`` tables. Evaluator names
used under ``sampling`` must be configured under ``evaluators`` when the file has that section,
else among the evaluators code or the environment chose (a name that is not is logged).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlencode, urlsplit, urlunsplit

from ragtrace._config.checks import at_least, between
from ragtrace._config.kinds import FLAG, NUMBER, YAML_BOOLEAN_HINT, Kind, describe
from ragtrace._config.options import Option, options
from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._config.suggestions import suggest

DEFAULT_PROMETHEUS_PORT = 9464
"""The port of ``sinks.prometheus: true`` (and of a ``sinks.prometheus`` mapping without one)."""


class SettingsError(ValueError):
    """A settings file or mapping is unreadable or invalid; the message says where and why,
    one line per mistake (``errors`` lists them). ``partial`` holds what the file set that was
    read without a mistake (None: nothing was read), so that the runtime can add the mistakes
    of the sections it builds to the same report."""

    def __init__(self, errors: str | Sequence[str], partial: FileLayer | None = None) -> None:
        self.errors = (errors,) if isinstance(errors, str) else tuple(errors)
        self.partial = partial
        super().__init__("\n".join(self.errors))


@dataclass(frozen=True)
class FileLayer:
    """What a settings file says: only the keys it names.

    Attributes:
        source: The file's path (for messages and ``Config.sources``).
        values: Option name -> the value the file gives it, already checked.
        warnings: Things in the file that were ignored (unknown keys, with the closest name).
    """

    source: str
    values: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


# -- checking values, collecting every mistake with where it is --------------------------------


class _Abandoned(SettingsError):
    """One value failed; ``attempt`` records it and reading goes on."""


class Checks:
    """Type and range checks on the values of one settings source, and what they found.

    ``fail(path, message)`` abandons the value being read (it raises); ``attempt()`` around
    each independent part of the source records that failure and goes on with the next part,
    so one ``SettingsError`` at the end lists every mistake, each as ``<source>: <path>:
    <message>``, with close matches for typos and hints for YAML's surprises (``1e-3`` and
    ``no`` are not what they look like)::

        checks = Checks("ragtrace.yaml")
        with checks.attempt():
            rate = checks.number(sampling.get("rate", 1.0), "sampling.rate", 0, 1)
        checks.raise_errors()

    Values are read by the same kinds as ``Config``'s (``ragtrace._config.kinds``) and checked
    by the same range checks (``ragtrace._config.checks``).

    Args:
        source: What the values came from (a file name, ``<dict>``): the start of every message.

    Attributes:
        errors: Every mistake found so far, as full messages.
        warnings: Every key ignored so far, as full messages.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def message(self, path: str, text: str) -> str:
        """``<source>: <path>: <text>``."""
        return f"{self.source}: {path}: {text}" if path else f"{self.source}: {text}"

    def fail(self, path: str, message: str) -> NoReturn:
        """Abandon the value at ``path`` (``""``: the whole source) with ``message``."""
        raise _Abandoned(self.message(path, message))

    def warn(self, path: str, message: str) -> None:
        """Note something ignored at ``path``."""
        self.warnings.append(self.message(path, message))

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """Record a failure inside the block and go on after it."""
        try:
            yield
        except _Abandoned as exc:
            self.errors.append(str(exc))

    def raise_errors(self) -> None:
        """Raise one ``SettingsError`` listing every mistake found, if there was any."""
        if self.errors:
            raise SettingsError(self.errors)

    def mapping(
        self, value: object, path: str, known: tuple[str, ...] | None, *, strict: bool = True
    ) -> dict[str, Any]:
        """A copy of a mapping with string keys, all in ``known`` (None: any key). An unknown
        key fails the value (``strict``) or is dropped with a warning."""
        if not isinstance(value, Mapping):
            self.fail(path, f"expected a mapping, got {describe(value)}")
        kept: dict[str, Any] = {}
        for key, item in value.items():
            at = f"{path}.{key}" if path else str(key)
            if not isinstance(key, str):
                self.fail(at, f"keys must be strings, got {describe(key)}")
            if known is not None and key not in known:
                hint = suggest(key, known) or f"; expected one of: {', '.join(known)}"
                if strict:
                    self.fail(at, f"unknown key{hint}")
                self.warn(at, f"unknown key, ignored{hint}")
                continue
            kept[key] = item
        return kept

    def items(self, value: object, path: str) -> list[Any]:
        """A copy of a list (or tuple)."""
        if not isinstance(value, list | tuple):
            self.fail(path, f"expected a list, got {describe(value)}")
        return list(value)

    def of_kind(self, kind: Kind, value: object, path: str) -> Any:
        """``value`` read by ``kind`` (a file's values have types: no text is parsed)."""
        try:
            return kind.accept(value)
        except ValueError as exc:
            self.fail(path, str(exc))

    def number(
        self, value: object, path: str, low: float | None = None, high: float | None = None
    ) -> float:
        """A finite number (not a bool) in ``[low, high]``, as a float."""
        number: float = self.of_kind(NUMBER, value, path)
        if low is not None:
            try:
                (at_least(low) if high is None else between(low, high))(value)
            except ValueError as exc:
                self.fail(path, str(exc))
        return number

    def boolean(self, value: object, path: str) -> bool:
        """``true`` or ``false``."""
        flag: bool = self.of_kind(FLAG, value, path)
        return flag

    def string(self, value: object, path: str) -> str:
        """A non-empty string."""
        if not isinstance(value, str) or not value:
            hint = YAML_BOOLEAN_HINT if isinstance(value, bool) else ""
            self.fail(path, f"expected a non-empty string, got {describe(value)}{hint}")
        return value

    def strings(self, value: object, path: str) -> tuple[str, ...]:
        """One non-empty string, or a list of them."""
        if isinstance(value, str):
            return (self.string(value, path),)
        return tuple(self.string(v, f"{path}[{i}]") for i, v in enumerate(self.items(value, path)))


# -- walking a settings mapping into the options it sets ----------------------------------------

Tree = dict[str, Any]
"""Section -> its keys: a nested ``Tree`` or the ``Option`` the key sets."""


def option_tree(cls: type) -> Tree:
    """The file's shape, from the declarations of ``cls`` (``Config``), in their order:
    ``evaluators`` before ``sampling``, which checks its names against them."""
    tree: Tree = {}
    for opt in options(cls):
        if opt.file is None:
            continue
        *sections, key = opt.file.split(".")
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[key] = opt
    return tree


def _prometheus(checks: Checks, value: object, path: str) -> object:
    """``true``: the default port; ``false`` or empty: no endpoint; a mapping: its port, else
    the default port."""
    if value is True:
        return {"port": DEFAULT_PROMETHEUS_PORT}
    if value is None or value is False:
        return {"port": None}
    if isinstance(value, Mapping):
        return {"port": DEFAULT_PROMETHEUS_PORT, **value}
    checks.fail(path, f"expected true, false or a mapping of port and addr, got {describe(value)}")


SHORTHANDS: dict[str, Callable[[Checks, object, str], object]] = {"sinks.prometheus": _prometheus}
"""A non-mapping value of a section -> the mapping it stands for."""


SAMPLING_KEYS = (
    "rate", "evaluator_rates", "rules", "rate_limits", "burst", "hourly_budget_usd", "cascades",
    "by", "failed_sessions",
)  # fmt: skip
"""The keys of the ``sampling`` section."""

QUEUE_KEYS = ("url", *(f.name for f in dataclasses.fields(RedisQueueOptions) if f.name != "url"))
"""The keys of a ``queue`` mapping: its URL and the Redis queue's options."""


def read_entries(checks: Checks, value: object, path: str) -> tuple[Any, ...]:
    """``evaluators``: the list as the file writes it (names, ``{name: ...}`` and ``{suite:
    ...}`` entries, evaluator objects in a mapping given in code); the runtime builds and
    checks each entry."""
    entries = checks.items(value, path)
    mistakes: list[_Abandoned] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) and not callable(getattr(entry, "evaluate", None)):
            try:
                entries[i] = checks.mapping(entry, f"{path}[{i}]", None)
            except _Abandoned as exc:
                mistakes.append(exc)
    if mistakes:  # each is reported; the list as a whole is not read
        checks.errors.extend(str(m) for m in mistakes[:-1])
        raise mistakes[-1]
    return tuple(entries)


def read_sampling(checks: Checks, value: object, path: str) -> dict[str, Any]:
    """``sampling``: the mapping as the file writes it, its keys checked; the runtime builds
    the sampler and checks its values."""
    return checks.mapping(value, path, SAMPLING_KEYS)


def read_queue(checks: Checks, value: object, path: str) -> str | None:
    """``queue``: a ``redis://`` URL, or ``{url, <option>: <value>, ...}`` (None: off, records
    are evaluated in the application's own process)."""
    if value is None:
        return None
    if isinstance(value, str):
        url = value
    else:
        q = checks.mapping(value, path, QUEUE_KEYS)
        if "url" not in q:
            checks.fail(path, "missing 'url' (redis://host:port/db)")
        url = _with_options(checks.string(q["url"], f"{path}.url"), {
            k: v for k, v in q.items() if k != "url"
        })  # fmt: skip
    try:
        RedisQueueOptions.from_url(url)
    except ValueError as exc:
        checks.fail(path, str(exc))
    return url


def _with_options(url: str, options: Mapping[str, object]) -> str:
    if not options:
        return url
    parts = urlsplit(url)
    extra = urlencode({k: str(v) for k, v in options.items()})
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


SECTION_READERS: Mapping[str, Callable[[Checks, object, str], Any]] = {
    "evaluators": read_entries,
    "sampler": read_sampling,
    "queue_url": read_queue,
}
"""Option name -> the reader of its value in a settings file, for the options whose value is a
section rather than one value of their kind."""


class FileReader:
    """Reads one settings mapping into option values, recording every mistake in ``checks``.

    Attributes:
        values: Option name -> its value, for every option read so far.
    """

    def __init__(self, checks: Checks) -> None:
        self.checks = checks
        self.values: dict[str, Any] = {}

    def section(self, value: object, tree: Tree, path: str) -> None:
        """Every option of one section (``path``: ``""`` for the top level)."""
        present = self.checks.mapping(value, path, tuple(tree), strict=False)
        for key, child in tree.items():
            if key not in present:
                continue
            at = f"{path}.{key}" if path else key
            with self.checks.attempt():
                if isinstance(child, Option):
                    self.values[child.name] = self.option(child, present[key], at)
                else:
                    shorthand = SHORTHANDS.get(at)
                    raw = (
                        present[key]
                        if shorthand is None
                        else shorthand(self.checks, present[key], at)
                    )
                    self.section(raw, child, at)

    def option(self, opt: Option, value: object, path: str) -> Any:
        """One option's value, read by its section's reader or checked by its kind."""
        reader = SECTION_READERS.get(opt.name)
        if reader is not None:
            return reader(self.checks, value, path)
        if opt.name == "evaluation_results" and isinstance(value, bool):
            return opt.default if value else "none"  # `sinks.otel: true | false`
        if opt.name == "phoenix_endpoint" and value is False:
            return None
        if opt.name == "phoenix_endpoint" and isinstance(value, Mapping):
            unknown = sorted(set(value) - {"endpoint"})
            if unknown or "endpoint" not in value:
                self.checks.fail(path, "expected a URL or {endpoint: URL} (Phoenix's base URL)")
            value = value.get("endpoint")
            path += ".endpoint"
        try:
            accepted = opt.accept(value, read_text=False)
            check_value(opt.name, accepted)
            return accepted
        except ValueError as exc:
            self.checks.fail(path, str(exc))


def read_layer(data: object, source: str, cls: type) -> FileLayer:
    """Check ``data`` (shaped like the file) and return the options of ``cls`` (``Config``)
    it sets.

    Raises:
        SettingsError: Every bad value, one ``<source>: <path>: <message>`` line each.
    """
    checks = Checks(source)
    reader = FileReader(checks)
    with checks.attempt():
        if not isinstance(data, Mapping):
            checks.fail("", f"expected a mapping at the top level, got {type(data).__name__}")
        reader.section(data, option_tree(cls), "")
    layer = FileLayer(source, reader.values, tuple(checks.warnings))
    if checks.errors:
        raise SettingsError(checks.errors, partial=layer)
    return layer


def check_value(name: str, value: Any) -> None:
    """The checks of an option beyond its kind, on a value from any source: a queue URL's
    options must be valid.

    Raises:
        ValueError: Saying what is wrong.
    """
    if name == "queue_url" and value is not None:
        RedisQueueOptions.from_url(value)


# -- the file ----------------------------------------------------------------------------------


def read_file(path: str | os.PathLike[str], cls: type) -> FileLayer:
    """The options of ``cls`` (``Config``) a ``.yaml``/``.yml``/``.toml`` settings file sets,
    and what it ignored.

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
    return read_layer({} if data is None else data, source, cls)


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
