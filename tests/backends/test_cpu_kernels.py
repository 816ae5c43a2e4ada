"""The integer kernel family ONNX Runtime runs, told from the machine and its CPU flags, and the
line the default embedder logs about it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace._backends import cpu_kernels
from ragtrace._backends.cpu_kernels import AGREE, cpu_flags, int8_kernels

AVX = frozenset({"sse4_1", "sse4_2", "avx"})
AVX2 = AVX | {"avx2", "fma"}
AVX512 = AVX2 | {"avx512f", "avx512bw", "avx512vl", "avx512dq"}


@pytest.mark.parametrize(
    ("flags", "family", "agrees"),
    [
        (AVX512 | {"avx512_vnni"}, "AVX-512 VNNI", True),
        (AVX512, "AVX-512", None),
        (AVX2 | {"avx_vnni"}, "AVX-VNNI", None),
        (AVX2, "AVX2", True),
        (AVX, "AVX", False),
        (frozenset({"sse4_1", "sse4_2"}), "SSE", False),
        (frozenset(), "SSE", False),
    ],
)
def test_each_x86_family_is_named_from_its_flags(
    flags: frozenset[str], family: str, agrees: bool | None
) -> None:
    kernels = int8_kernels("x86_64", flags)
    assert (kernels.name, kernels.agrees, kernels.exact_products) == (family, agrees, True)
    assert family in kernels.describe()


def test_a_vnni_flag_without_avx512bw_is_not_the_avx512_vnni_family() -> None:
    # VNNI is read with the instruction set it extends: no AVX-512 BW, no AVX-512 kernels
    assert int8_kernels("x86_64", AVX2 | {"avx512_vnni"}).name == "AVX2"


def test_another_architecture_is_neither_exact_by_construction_nor_measured() -> None:
    kernels = int8_kernels("aarch64", frozenset({"asimd", "asimddp"}))
    assert (kernels.name, kernels.exact_products, kernels.agrees) == ("aarch64", False, None)
    assert "not measured" in kernels.describe()


def test_the_log_line_says_what_is_known_of_each_kind_of_family() -> None:
    measured = int8_kernels("AMD64", AVX2).describe()  # Windows names the machine AMD64
    assert "bit-identical" in measured and all(name in measured for name in AGREE)
    unmeasured = int8_kernels("x86_64", AVX512).describe()
    assert "exact integer products, not measured" in unmeasured
    differing = int8_kernels("x86_64", frozenset()).describe()
    assert "measured to differ" in differing and "0.994 at worst" in differing


def test_flags_come_from_cpuid_as_numpy_sees_it_and_name_the_families_sets() -> None:
    from numpy._core._multiarray_umath import __cpu_features__ as features

    flags = cpu_flags()
    assert ("avx2" in flags) == bool(features["AVX2"])
    assert ("avx512_vnni" in flags) == bool(features["AVX512VNNI"])
    families = {"AVX-512 VNNI", "AVX-512", "AVX-VNNI", "AVX2", "AVX", "SSE"}
    assert int8_kernels(flags=flags).name in families


def test_without_numpy_s_cpuid_view_flags_are_read_from_the_first_processor_of_cpuinfo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cpu_kernels, "_cpuid_flags", lambda: None)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse4_1 avx2 fma\n\n"
        "processor\t: 1\nflags\t\t: fpu sse4_1 avx2 fma avx512bw\n",
        encoding="utf-8",
    )
    assert cpu_flags(cpuinfo) == frozenset({"fpu", "sse4_1", "avx2", "fma"})
    assert cpu_flags(tmp_path / "missing") == frozenset()
    (tmp_path / "binary").write_bytes(b"\xff\xfe flags : \x00")
    assert cpu_flags(tmp_path / "binary") == frozenset()


def test_avx_vnni_is_taken_from_cpuinfo_only_beside_an_avx2_that_cpuid_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags\t\t: sse4_1 avx2 fma avx_vnni avx512bw\n", encoding="utf-8")
    monkeypatch.setattr(cpu_kernels, "_cpuid_flags", lambda: frozenset({"sse4_1", "avx2"}))
    assert cpu_flags(cpuinfo) == frozenset({"sse4_1", "avx2", "avx_vnni"})  # not avx512bw
    monkeypatch.setattr(cpu_kernels, "_cpuid_flags", lambda: frozenset({"sse4_1"}))
    assert cpu_flags(cpuinfo) == frozenset({"sse4_1"})  # an emulated SSE processor
