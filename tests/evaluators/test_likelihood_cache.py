"""The converted likelihood models on disk: kept once, read back, rebuilt when damaged, keyed by
the file and the libraries, off on request, and safe with two processes loading at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends import likelihood_cache
from ragtrace._backends.likelihood_cache import MARKER, cache_key, load_converted
from tests.components import missing_component

ROOT = Path(__file__).resolve().parents[2]


class FakeNetwork:
    """Saves like a transformers model: files in a folder."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.hf_quantizer: Any = "gguf"
        self.config = type("Config", (), {})()
        self.config.quantization_config = "gguf"

    def save_pretrained(self, folder: Path, safe_serialization: bool = True) -> None:
        assert self.hf_quantizer is None  # the GGUF mark is lifted while saving
        (Path(folder) / "model.safetensors").write_text(self.tag)


class FakeTokenizer:
    def save_pretrained(self, folder: Path) -> None:
        (Path(folder) / "tokenizer.json").write_text("{}")


def fake_load(folder: Path) -> tuple[Any, Any]:
    return FakeTokenizer(), FakeNetwork((folder / "model.safetensors").read_text())


@pytest.fixture
def gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(likelihood_cache.CACHE_ENV, str(tmp_path / "cache"))
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF fake weights")
    return path


def test_converted_once_then_read_from_disk(gguf: Path) -> None:
    calls: list[int] = []

    def convert() -> tuple[Any, Any]:
        calls.append(1)
        return FakeTokenizer(), FakeNetwork("converted weights")

    (_, network), route = load_converted(gguf, convert, fake_load)
    assert route == "converted" and calls == [1] and network.hf_quantizer == "gguf"
    folder = gguf.parent / "cache" / cache_key(gguf)
    assert json.loads((folder / MARKER).read_text())["gguf"] == str(gguf)
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name, f"{folder.name}.lock"]
    (_, again), route = load_converted(gguf, convert, fake_load)
    assert route == "disk" and calls == [1] and again.tag == "converted weights"


def test_a_damaged_copy_is_rebuilt(gguf: Path) -> None:
    convert = lambda: (FakeTokenizer(), FakeNetwork("w"))  # noqa: E731
    load_converted(gguf, convert, fake_load)
    folder = gguf.parent / "cache" / cache_key(gguf)
    (folder / "model.safetensors").unlink()
    _, route = load_converted(gguf, convert, fake_load)
    assert route == "converted" and (folder / "model.safetensors").read_text() == "w"


def test_the_key_follows_the_file_and_the_libraries(
    gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cache_key(gguf)
    gguf.write_bytes(b"GGUF other weights")
    os.utime(gguf, ns=(1, 1))  # another content and time: the digest is computed again
    second = cache_key(gguf)
    assert second != first
    monkeypatch.setattr(likelihood_cache, "_version", lambda name: f"{name}-99")
    assert cache_key(gguf) != second


def test_off_and_unwritable_only_cost_the_speed_up(
    gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    convert = lambda: (FakeTokenizer(), FakeNetwork("w"))  # noqa: E731
    monkeypatch.setenv(likelihood_cache.CACHE_ENV, "off")
    assert load_converted(gguf, convert, fake_load)[1] == "uncached"
    assert not (gguf.parent / "cache").exists()
    blocked = gguf.parent / "blocked"
    blocked.write_text("a file where the folder should be")
    monkeypatch.setenv(likelihood_cache.CACHE_ENV, str(blocked / "cache"))
    (_, network), route = load_converted(gguf, convert, fake_load)
    assert route == "uncached" and network.tag == "w"


LOAD = """
import json, sys
from ragtrace.evaluators._perplexity import causal_lm
lm = causal_lm("smollm2-135m", threads=1, context_tokens=256)
[found] = lm.score([("", "The cat sat on the mat by the door.")])
print(json.dumps({"source": lm.source, "logprobs": found.logprobs}))
"""


def test_two_processes_loading_at_once_convert_once(tmp_path: Path) -> None:
    """The real packaged GGUF, two processes started together on an empty cache: one converts
    while the other waits for it and reads its copy; both score alike; nothing half-written is
    left."""
    from ragtrace._judges.local import resolve_model_path

    try:
        resolve_model_path("smollm2-135m")
    except ImportError as exc:
        missing_component(f"the packaged SmolLM2 model is missing: {exc}")
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        likelihood_cache.CACHE_ENV: str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", LOAD],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=900)
        assert process.returncode == 0, err[-2000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(r["source"] for r in results) == ["converted", "disk"]
    assert results[0]["logprobs"] == pytest.approx(results[1]["logprobs"], abs=1e-6)
    entries = sorted(p.name for p in cache.iterdir())
    (key,) = [e for e in entries if not e.endswith(".lock")]
    assert entries == [key, f"{key}.lock"]  # no temporary folder left behind
    assert (cache / key / "model.safetensors").stat().st_size > 100_000_000
