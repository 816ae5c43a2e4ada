"""Judges for the judge tests: real llama.cpp servers on loopback with packaged GGUFs, and a
misbehaving OpenAI-compatible server for failure paths.

``server`` is the misbehaving server (one per test module), ``tally`` the judge calls' outcomes
during one test. ``smol_judge`` (SmolLM2-135M) is fast and real but useless at judging: use it for
plumbing, parsing and error paths. ``qwen_judge`` (Qwen2.5-Coder-0.5B, the embedded default) is for
a few direction checks on obvious cases. Each server starts once per test session; each client has
its own cache file in a temporary folder. A missing xllamacpp or model package skips locally and
fails under ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace._backends._loading import MissingExtraError
from ragtrace._judges import (
    JudgeClient,
    LocalJudgeServer,
    UsageTally,
    add_listener,
    remove_listener,
)
from tests.components import missing_component
from tests.judges.misbehaving_server import MisbehavingJudge


def _server(model: str) -> Iterator[LocalJudgeServer]:
    try:
        server = LocalJudgeServer(model).start()
    except MissingExtraError as exc:
        missing_component(f"the local judge needs {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def smol_server() -> Iterator[LocalJudgeServer]:
    yield from _server("smollm2-135m")


@pytest.fixture(scope="session")
def qwen_server() -> Iterator[LocalJudgeServer]:
    yield from _server("qwen2.5-coder-0.5b")


def client_for(server: LocalJudgeServer, cache_dir: Path, **options: object) -> JudgeClient:
    """A client on ``server`` with its own cache file under ``cache_dir``."""
    return JudgeClient(
        server.model_name,
        api_base=server.api_base,
        cache=cache_dir / "judge_cache.sqlite",
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="session")
def smol_judge(
    smol_server: LocalJudgeServer, tmp_path_factory: pytest.TempPathFactory
) -> JudgeClient:
    return client_for(smol_server, tmp_path_factory.mktemp("smol-cache"), timeout_s=60)


@pytest.fixture(scope="session")
def qwen_judge(
    qwen_server: LocalJudgeServer, tmp_path_factory: pytest.TempPathFactory
) -> JudgeClient:
    return client_for(qwen_server, tmp_path_factory.mktemp("qwen-cache"), timeout_s=120)


@pytest.fixture(scope="module")
def server() -> Iterator[MisbehavingJudge]:
    judge = MisbehavingJudge().start()
    yield judge
    judge.stop()


@pytest.fixture
def tally() -> Iterator[UsageTally]:
    listener = add_listener(UsageTally())
    yield listener
    remove_listener(listener)
