"""The converted likelihood models, kept on disk so a GGUF file is de-quantised once per machine.

transformers reads a GGUF file by de-quantising every tensor to float32, which took 47-128 s
for the packaged models on a busy 2-core box, at every process start. ``load_converted`` keeps
the converted weights and tokenizer as a plain transformers folder (safetensors) and loads that
instead (a fresh process: 11-12 s, imports included; identical log-probabilities)::

    $RAGTRACE_CACHE_DIR/likelihood/<key>/     (else $XDG_CACHE_HOME/ragtrace/..., ~/.cache/...)
        config.json  model.safetensors  tokenizer.json  ...  ragtrace-likelihood.json

How it is keyed and invalidated: ``<key>`` is a sha256 over the GGUF file's own sha256, the
versions of transformers, torch and gguf, and ``FORMAT``; another file, a library upgrade or a
change of this format gives another key, so a stale copy is never read (it stays on disk until
removed: delete the ``likelihood`` folder to reclaim the space, about 4 bytes a parameter:
0.54 GB for SmolLM2-135M, 2.5 GB for Qwen2.5-Coder-0.5B). A copy that fails to load is removed
and rebuilt. ``$RAGTRACE_LIKELIHOOD_CACHE=off`` turns the cache off; a path there puts it
elsewhere.

Several processes: the conversion is written to a temporary folder beside the final one and
renamed into place (an atomic rename), so a reader sees a complete copy or none; an exclusive
lock file (``<key>.lock``, ``fcntl.flock``) lets one process convert while the others wait and
then read its copy, instead of all converting at once. A full disk or an unwritable folder
costs only the speed-up: it is logged and the converted model is used from memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from ragtrace._backends._loading import cache_dir, exclusive_lock
from ragtrace._backends.model_files import sha256_of

LOG = logging.getLogger(__name__)
CACHE_ENV = "RAGTRACE_LIKELIHOOD_CACHE"
FORMAT = 1
MARKER = "ragtrace-likelihood.json"
_OFF = {"0", "off", "false", "no", "none"}
_digests: dict[tuple[str, int, int], str] = {}

Loaded = tuple[Any, Any]  # (tokenizer, network)


def cache_root() -> Path | None:
    """The folder the converted models live in, None when ``$RAGTRACE_LIKELIHOOD_CACHE`` is
    off."""
    setting = os.environ.get(CACHE_ENV, "").strip()
    if setting.lower() in _OFF:
        return None
    if setting:
        return Path(setting).expanduser()
    return cache_dir() / "likelihood"


def cache_key(gguf: Path) -> str:
    """The key of ``gguf``'s converted copy: its content and the converting libraries."""
    parts = {
        "format": FORMAT,
        "gguf_sha256": file_sha256(gguf),
        **{name: _version(name) for name in ("transformers", "torch", "gguf")},
    }
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def file_sha256(path: Path) -> str:
    """The file's sha256, remembered per (path, size, modification time) in this process."""
    stat = path.stat()
    memo = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    found = _digests.get(memo)
    if found is None:
        found = _digests[memo] = sha256_of(path)
    return found


def load_converted(
    gguf: Path, convert: Callable[[], Loaded], load: Callable[[Path], Loaded]
) -> tuple[Loaded, str]:
    """``(tokenizer, network)`` for ``gguf``: from its converted copy when there is one, else
    ``convert()``-ed and stored for the next process. The second item says which:
    ``disk`` (read the copy), ``converted`` (converted and stored) or ``uncached`` (converted;
    the cache is off or could not be written)."""
    root = cache_root()
    if root is None:
        return convert(), "uncached"
    try:
        root.mkdir(parents=True, exist_ok=True)
        key = cache_key(gguf)
    except OSError as exc:
        LOG.warning("likelihood cache %s unusable (%s); converting %s in memory", root, exc, gguf)
        return convert(), "uncached"
    folder = root / key
    found = _read(folder, load)
    if found is not None:
        return found, "disk"
    with exclusive_lock(root / f"{key}.lock"):
        found = _read(folder, load)  # another process may have converted it while we waited
        if found is not None:
            return found, "disk"
        converted = convert()
        stored = _store(folder, converted, gguf)
    return converted, "converted" if stored else "uncached"


def _read(folder: Path, load: Callable[[Path], Loaded]) -> Loaded | None:
    if not (folder / MARKER).is_file():
        return None
    try:
        return load(folder)
    except Exception as exc:  # a damaged copy: rebuild it
        LOG.warning("likelihood cache %s unreadable (%s); converting again", folder, exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None


def _store(folder: Path, loaded: Loaded, gguf: Path) -> bool:
    tokenizer, network = loaded
    try:
        temporary = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError as exc:
        LOG.warning("likelihood cache: cannot keep %s (%s); it stays in memory", gguf, exc)
        return False
    try:
        # The weights are de-quantised float32 now; transformers refuses to save a model it
        # still takes for a GGUF-quantised one.
        quantizer = getattr(network, "hf_quantizer", None)
        network.hf_quantizer = None
        config_quantization = network.config.__dict__.pop("quantization_config", None)
        quantized = getattr(network, "is_quantized", None)
        if quantized is not None:
            network.is_quantized = False
        try:
            network.save_pretrained(temporary, safe_serialization=True)
        finally:
            network.hf_quantizer = quantizer
            if config_quantization is not None:
                network.config.quantization_config = config_quantization
            if quantized is not None:
                network.is_quantized = quantized
        tokenizer.save_pretrained(temporary)
        marker = {"gguf": str(gguf), "key": folder.name, "format": FORMAT}
        (temporary / MARKER).write_text(json.dumps(marker) + "\n")
        os.rename(temporary, folder)
        return True
    except OSError as exc:
        LOG.warning("likelihood cache: cannot keep %s (%s); it stays in memory", gguf, exc)
        return False
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"
