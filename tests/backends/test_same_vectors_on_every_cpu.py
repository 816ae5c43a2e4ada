"""The default embedder's vectors are the same bits on ONNX Runtime's AVX2 kernels as on this
processor's, and stay within the stated distance of the float32 model's.

The AVX2 kernels run under QEMU's user-mode emulator with its Haswell model (AVX2 and FMA, no
AVX-512, no VNNI): ONNX Runtime reads the emulated CPUID and picks the kernels a real Haswell
gets. On a processor with AVX-512 VNNI this compares two kernel families; on an AVX2 processor
it compares the emulated one with the native one. Debian's ``qemu-user`` package provides
``qemu-x86_64``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.components import missing_component, require_binary

pytestmark = pytest.mark.integration

SENTENCES = [
    "How do I reset my router?",
    "Hold the reset button on the back of the router for ten seconds.",
    "The status light blinks green while the router restarts, then turns solid white.",
    "Invoices are issued on the first business day of each month, and late payments accrue "
    "interest at 1.5% a month after a 30-day grace period.",
    "Der Vertrag verlängert sich automatisch um ein Jahr.",
]

EMBED = """
import json, sys
import numpy as np
from ragtrace._backends.cpu_kernels import int8_kernels
from ragtrace._backends.embeddings import get_embedder
backend = sys.argv[2]
vectors = get_embedder(backend=backend, cache_size=0).encode(json.loads(sys.argv[3]))
np.save(sys.argv[1], vectors)
print(int8_kernels().name)
"""


def _embed(out: Path, backend: str, env: dict[str, str], emulate: str | None = None) -> str:
    command = [sys.executable, "-c", EMBED, str(out), backend, json.dumps(SENTENCES)]
    if emulate is not None:
        command = [require_binary("qemu-x86_64"), "-cpu", emulate, *command]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        missing_component("an x86-64 processor: this test compares x86-64 kernel families")
    cache = tmp_path_factory.mktemp("cache")
    root = Path(__file__).resolve().parents[2]
    return {
        **os.environ,
        "RAGTRACE_CACHE_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }


def test_the_int8_vectors_are_bit_identical_on_the_avx2_kernels(
    env: dict[str, str], tmp_path: Path
) -> None:
    native = _embed(tmp_path / "native.npy", "onnx-int8", env)  # derives the copy natively
    emulated = _embed(tmp_path / "haswell.npy", "onnx-int8", env, emulate="Haswell")
    assert emulated == "AVX2", "QEMU's Haswell model must show ONNX Runtime an AVX2 processor"
    here, there = np.load(tmp_path / "native.npy"), np.load(tmp_path / "haswell.npy")
    assert here.shape == (len(SENTENCES), 384)
    assert np.array_equal(here, there), (native, np.abs(here - there).max())


def test_the_int8_vectors_stay_within_the_stated_distance_of_float32(
    env: dict[str, str], tmp_path: Path
) -> None:
    _embed(tmp_path / "int8.npy", "onnx-int8", env)
    _embed(tmp_path / "float32.npy", "onnx", env)
    cosines = (np.load(tmp_path / "int8.npy") * np.load(tmp_path / "float32.npy")).sum(axis=1)
    # docs/decisions/same-vectors-on-every-cpu.md: 0.992 on average, 0.987 at worst (200
    # RAGTruth sentences)
    assert cosines.min() > 0.98 and cosines.mean() > 0.985, cosines
