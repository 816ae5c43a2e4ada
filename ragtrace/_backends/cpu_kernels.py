"""Which of ONNX Runtime's CPU kernels this processor runs, and whether the default embedder's
vectors were measured on them.

ONNX Runtime picks its matrix kernels when it starts, by the processor's instruction sets. The
int8 copy of MiniLM (``ragtrace._backends.dynamic_int8``) is written so that every kernel computes
the same bits: 7-bit weights keep the integer products exact on the kernels that sum products in
16 bits (AVX2, AVX-512 without VNNI), and its softmax is spelled out in operators that are the same
code on every x86-64 processor (``ragtrace._backends.portable_graph``). The default embedder logs
once, when it loads, which kernels run here and whether this family was measured to give the
same vectors as the others (AVX2 and AVX-512 do; the kernels of processors without AVX2, made
before 2013-2015, differ a little)::

    kernels = int8_kernels()          # this machine's
    kernels.name, kernels.agrees      # ("AVX-512 VNNI", True)

``int8_kernels(machine, flags)`` takes the machine and the CPU flags (as ``/proc/cpuinfo`` names
them) so that each family can be described without its processor.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AGREE", "DIFFER", "KernelFamily", "cpu_flags", "int8_kernels"]

# What was measured (docs/decisions/same-vectors-on-every-cpu.md; 200 RAGTruth sentences on an
# AMD EPYC with AVX-512 VNNI, and the same sentences under QEMU's models of older processors):
# the families whose vectors are bit-identical to each other's, and those that differ a little.
AGREE = frozenset({"AVX-512 VNNI", "AVX2"})
DIFFER = {family: "cosine 0.9994 on average, 0.994 at worst" for family in ("AVX", "SSE")}
_X86 = {"x86_64", "amd64", "x64", "i686", "i386"}


@dataclass(frozen=True)
class KernelFamily:
    """The integer kernels ONNX Runtime runs on one processor.

    Attributes:
        name: The family: ``AVX-512 VNNI``, ``AVX-VNNI``, ``AVX-512``, ``AVX2``, ``AVX``, ``SSE``
            (an x86-64 processor without AVX) or the machine's name for another architecture.
        exact_products: Whether the int8 copy's integer products are exact there by
            construction (every x86-64 family: 7-bit weights never overflow the 16-bit sums).
        agrees: True where its vectors were measured bit-identical to the other ``AGREE``
            families', False where they were measured to differ (``DIFFER``), None where
            nothing was measured.
    """

    name: str
    exact_products: bool
    agrees: bool | None

    def describe(self) -> str:
        """One line for the log: the family and what is known of its vectors."""
        if self.agrees:
            return (
                f"onnxruntime's {self.name} kernels: vectors bit-identical to those of every "
                f"measured family ({', '.join(sorted(AGREE))})"
            )
        if self.agrees is False:
            return (
                f"onnxruntime's {self.name} kernels: vectors measured to differ a little from "
                f"the AVX2 and AVX-512 families' ({DIFFER[self.name]}), so scores near a "
                "threshold may get another verdict than there"
            )
        if self.exact_products:
            return (
                f"onnxruntime's {self.name} kernels: exact integer products, not measured "
                "against the other families (scores may differ from theirs in the fourth decimal)"
            )
        return (
            f"onnxruntime's kernels for {self.name}: not measured; scores may differ from an "
            "x86-64 processor's in the fourth decimal"
        )


def int8_kernels(machine: str | None = None, flags: frozenset[str] | None = None) -> KernelFamily:
    """The integer kernel family for ``machine`` with CPU ``flags`` (default: this machine's)."""
    machine = (machine if machine is not None else platform.machine()).lower()
    if machine not in _X86:
        return KernelFamily(machine or "an unknown architecture", False, None)
    flags = cpu_flags() if flags is None else flags
    if {"avx512bw", "avx512_vnni"} <= flags:
        name = "AVX-512 VNNI"
    elif "avx512bw" in flags:
        name = "AVX-512"
    elif {"avx2", "avx_vnni"} <= flags:
        name = "AVX-VNNI"
    elif "avx2" in flags:
        name = "AVX2"
    elif "avx" in flags:
        name = "AVX"
    else:
        name = "SSE"
    agrees = True if name in AGREE else (False if name in DIFFER else None)
    return KernelFamily(name, True, agrees)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """This processor's instruction sets that choose a kernel family, named as ``/proc/cpuinfo``
    names them.

    They are read as ONNX Runtime reads them, from the CPUID instruction (through numpy's view
    of it), so an emulated processor (QEMU's ``-cpu Haswell``) reports what it emulates; where
    numpy does not expose that view, from ``cpuinfo``'s first processor. ``avx_vnni``, which
    numpy does not name, comes from ``cpuinfo`` beside an AVX2 that CPUID reports.
    """
    listed = _cpuinfo_flags(cpuinfo)
    seen = _cpuid_flags()
    if seen is None:
        return listed
    return seen | ({"avx_vnni"} & listed if "avx2" in seen else frozenset())


# numpy's names for the CPUID bits that choose a family, and /proc/cpuinfo's
_CPUID_NAMES = {
    "SSE41": "sse4_1",
    "AVX": "avx",
    "AVX2": "avx2",
    "FMA3": "fma",
    "AVX512F": "avx512f",
    "AVX512BW": "avx512bw",
    "AVX512VNNI": "avx512_vnni",
}


def _cpuid_flags() -> frozenset[str] | None:
    import importlib

    # numpy 2 names the module ``numpy._core``, numpy 1 ``numpy.core``
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            features = getattr(importlib.import_module(module), "__cpu_features__", None)
        except ImportError:
            continue
        if isinstance(features, dict):
            return frozenset(ours for name, ours in _CPUID_NAMES.items() if features.get(name))
    return None


def _cpuinfo_flags(cpuinfo: Path) -> frozenset[str]:
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()
