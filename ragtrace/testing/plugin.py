"""The ragtrace pytest plugin: a session's scores in one table, a scores file, CI gates.

Installed with ragtrace (the ``pytest11`` entry point named ``ragtrace``) and active in every
pytest run; ``-p no:ragtrace`` turns it off. It stays inert until a test scores something:
importing it loads pytest and ragtrace's light core only (no model, judge or framework
library), and a session that scores nothing prints nothing.

Every case that ``ragtrace.testing.assert_scores`` or ``ragtrace.evaluate`` scores during the
session is collected (passed or failed), with the test that scored it. At the end:

- one table in the terminal summary: per score, cases, errors, pass rate, mean and the worst
  case with its test (``ragtrace.testing._session``);
- ``--ragtrace-scores PATH`` (ini ``ragtrace_scores``): the scores file ``ragtrace report``
  reads, one line per scored case, written even when tests failed;
- ``--ragtrace-fail-if EXPR`` (repeatable; ini ``ragtrace_fail_if``, one per line): the gates of
  ``ragtrace report --fail-if`` (``faithfulness.pass_rate < 0.9``,
  ``answer_relevance.mean_low < 0.5``...), checked on the same numbers ``ragtrace report``
  computes for that file; a gate that holds, or that names a score the session never scored,
  fails the session (exit status 1) and says why.

Judge answers are cached across runs: unless ``$RAGTRACE_JUDGE_CACHE`` is set, the session sets
it (for itself, its xdist workers and ``evaluate``'s worker processes) to
``--ragtrace-judge-cache PATH`` (ini ``ragtrace_judge_cache``), else to
``judge_cache.sqlite`` in the pytest cache (``.pytest_cache/d/ragtrace/``, cleared by
``pytest --cache-clear``); judge clients made without a cache path of their own use it, so a
re-run with the same cases asks the judge nothing. With ``-p no:cacheprovider`` and no path
given, ragtrace's own default applies (``~/.cache/ragtrace``).

pytest-xdist: each worker collects its own scores and sends them to the controller with its
results; the table, the file and the gates cover the whole session.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragtrace._report.gates import Gate
    from ragtrace.testing._session import SessionScores

SESSION_PLUGIN = "ragtrace-session"
WORKER_KEY = "ragtrace_scores"
JUDGE_CACHE_ENV = "RAGTRACE_JUDGE_CACHE"  # read by ragtrace._judges.cache
JUDGE_CACHE_FILE = "judge_cache.sqlite"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragtrace", "ragtrace: scores of RAG answers (see docs/testing.md)")
    group.addoption(
        "--ragtrace-scores",
        metavar="PATH",
        help="write every score asserted in the session to PATH, the scores file "
        "`ragtrace report` reads (ini: ragtrace_scores)",
    )
    group.addoption(
        "--ragtrace-fail-if",
        action="append",
        default=[],
        metavar="EXPR",
        help="fail the session when a gate of `ragtrace report --fail-if` holds over the "
        "session's scores, e.g. 'faithfulness.pass_rate < 0.9'; repeatable "
        "(ini: ragtrace_fail_if, one per line)",
    )
    group.addoption(
        "--ragtrace-judge-cache",
        metavar="PATH",
        help="the judge answers' cache file (default: $RAGTRACE_JUDGE_CACHE, else "
        ".pytest_cache/d/ragtrace/judge_cache.sqlite; ini: ragtrace_judge_cache)",
    )
    parser.addini("ragtrace_scores", "scores file to write (relative to the rootdir)")
    parser.addini("ragtrace_fail_if", "gates that fail the session", type="linelist")
    parser.addini("ragtrace_judge_cache", "judge cache file (relative to the rootdir)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Set the judge cache before conftest files are imported: a judge client a conftest builds
    at import time gets it too."""
    early_config.stash[_JUDGE_CACHE] = JudgeCacheSetting.apply(
        _judge_cache(early_config, early_config.known_args_namespace.ragtrace_judge_cache)
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    from ragtrace._offline.listeners import add_result_listener
    from ragtrace.testing._session import SessionScores

    if _JUDGE_CACHE not in config.stash:  # loaded too late for the early hook (``-p`` in code)
        given = config.getoption("ragtrace_judge_cache")
        config.stash[_JUDGE_CACHE] = JudgeCacheSetting.apply(_judge_cache(config, given))
    session = RagtraceSession(config, SessionScores(), _gates(config), _scores_path(config))
    session.judge_cache = config.stash[_JUDGE_CACHE].shown
    add_result_listener(session.scores.hear)
    config.pluginmanager.register(session, SESSION_PLUGIN)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if isinstance(session, RagtraceSession):
        session.close()
        config.pluginmanager.unregister(session, SESSION_PLUGIN)
    setting = config.stash.get(_JUDGE_CACHE, None)
    if setting is not None:
        setting.restore()


class JudgeCacheSetting:
    """``$RAGTRACE_JUDGE_CACHE`` as the session set it, and what it was before."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.before = os.environ.get(JUDGE_CACHE_ENV)

    @classmethod
    def apply(cls, path: str | None) -> JudgeCacheSetting:
        """Point the variable at ``path`` (None: leave it as it is)."""
        setting = cls(path)
        if path is not None:
            os.environ[JUDGE_CACHE_ENV] = path
        return setting

    @property
    def shown(self) -> str | None:
        """The file judge clients use by default during the session, when known."""
        return self.path or self.before

    def restore(self) -> None:
        """Put the variable back as it was."""
        if self.path is None:
            return
        if self.before is None:
            os.environ.pop(JUDGE_CACHE_ENV, None)
        else:
            os.environ[JUDGE_CACHE_ENV] = self.before
        self.path = None


_JUDGE_CACHE = pytest.StashKey[JudgeCacheSetting]()


class RagtraceSession:
    """The plugin's state and hooks for one pytest session."""

    def __init__(
        self,
        config: pytest.Config,
        scores: SessionScores,
        gates: list[Gate],
        scores_path: str | None,
    ) -> None:
        self.config = config
        self.scores = scores
        self.gates = gates
        self.scores_path = scores_path
        self.judge_cache: str | None = None
        self.lines: list[str] = []
        self.failed = False
        self.lost_workers: list[str] = []

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def close(self) -> None:
        from ragtrace._offline.listeners import remove_result_listener

        remove_result_listener(self.scores.hear)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.scores.nodeid = nodeid

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.scores.nodeid = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist: a worker finished; add the scores it collected."""
        wire = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if wire is not None:
            self.scores.add_wire(wire)
        elif error is not None:
            name = getattr(node, "gateway", None)
            self.lost_workers.append(str(getattr(name, "id", "a worker")))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker:
            self.config.workeroutput[WORKER_KEY] = self.scores.wire()  # type: ignore[attr-defined]
            return
        if not self.scores.entries and not self.gates and self.scores_path is None:
            return
        self._finish()
        if self.failed and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _finish(self) -> None:
        from ragtrace.testing import _session as summary

        intervals = summary.needs_intervals(self.gates)
        try:
            report, lines = self.scores.report(self.scores_path, intervals=intervals)
        except OSError as exc:
            self.failed = True
            self.lines.append(f"cannot write --ragtrace-scores {self.scores_path}: {exc}")
            report, lines = self.scores.report(None, intervals=intervals)
        if lines:
            self.lines += [summary.table(report, lines), *summary.notes(report, lines)]
        else:
            self.lines.append("no scores were asserted in this session")
        if self.scores.judge:
            self.lines.append(self._judge_line())
        if self.lost_workers:
            self.lines.append(
                f"scores of {', '.join(self.lost_workers)} are missing: the worker went down"
            )
        if self.scores_path is not None and not self.failed:
            shown = _shown_path(self.scores_path)
            self.lines.append(f"scores written to {shown} (ragtrace report {shown})")
        for failed, message in summary.check_gates(self.gates, report):
            self.failed = self.failed or failed
            self.lines.append(f"gate {'FAILED' if failed else 'ok'}: {message}")

    def _judge_line(self) -> str:
        from ragtrace._offline.summary import judge_line

        judge = {"outcomes": {}, **self.scores.judge}
        where = f"; cache {_shown_path(self.judge_cache)}" if self.judge_cache else ""
        return judge_line(judge) + where

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.lines:
            return
        terminalreporter.write_sep("=", "ragtrace scores", red=self.failed, green=not self.failed)
        for line in self.lines:
            terminalreporter.write_line(line)


def _gates(config: pytest.Config) -> list[Gate]:
    expressions = [*config.getini("ragtrace_fail_if"), *config.getoption("ragtrace_fail_if")]
    if not expressions:
        return []
    from ragtrace._report.gates import GateError, parse_gate

    gates = []
    for expression in expressions:
        try:
            gates.append(parse_gate(expression))
        except GateError as exc:
            raise pytest.UsageError(f"--ragtrace-fail-if: {exc}") from None
    return gates


def _scores_path(config: pytest.Config) -> str | None:
    given = config.getoption("ragtrace_scores")
    if given:
        return os.path.abspath(os.path.expanduser(str(given)))
    from_ini = config.getini("ragtrace_scores")
    if from_ini:
        return str(config.rootpath / os.path.expanduser(str(from_ini)))
    return None


def _judge_cache(config: pytest.Config, given: object) -> str | None:
    """The cache file to set for the session (``given``: the command line's), or None to leave
    ``$RAGTRACE_JUDGE_CACHE`` be (set already, or no pytest cache to put it in)."""
    if given:
        return os.path.abspath(os.path.expanduser(str(given)))
    if os.environ.get(JUDGE_CACHE_ENV):
        return None
    from_ini = config.getini("ragtrace_judge_cache")
    if from_ini:
        return str(config.rootpath / os.path.expanduser(str(from_ini)))
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return None
    cache_dir = Path(os.path.expandvars(str(config.getini("cache_dir")))).expanduser()
    return str(config.rootpath / cache_dir / "d" / "ragtrace" / JUDGE_CACHE_FILE)


def _shown_path(path: str) -> str:
    """``path`` relative to the current directory when it lies below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative
