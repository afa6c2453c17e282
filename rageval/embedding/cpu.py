"""The CPU's feature flags, which decide whether bf16 is available to OpenVINO, the weight range of
per-token int8 (VNNI), and the kernel class of int8 and bf16 products (:func:`kernel_class`): read
once per process."""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags from /proc/cpuinfo; None when it cannot be read (not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    return frozenset(
        f for line in text.splitlines() if line.startswith("flags") for f in line.split()
    )


# ONEDNN_MAX_CPU_ISA values (oneDNN's CPU dispatcher control), lowest first, and the kernel class
# each caps to; OpenVINO's CPU plugin runs its matrix products through oneDNN, which honours it
_CAPS = (
    ("SSE41", "other"),
    ("AVX", "other"),
    ("AVX2", "avx2"),
    ("AVX2_VNNI", "avx2_vnni"),
    ("AVX2_VNNI_2", "avx2_vnni"),
    ("AVX512_CORE", "avx512"),
    ("AVX512_CORE_VNNI", "avx512_vnni"),
    ("AVX512_CORE_BF16", "avx512_bf16"),
    ("AVX10_1_512", "avx512_bf16"),
    ("AVX512_CORE_FP16", "avx512_bf16"),
)
CLASSES = ("other", "avx2", "avx2_vnni", "avx512", "avx512_vnni", "avx512_bf16", "amx")


def kernel_class(honour_onednn_cap: bool = False) -> str:
    """The class of the CPU's matrix kernels: ``amx`` (AMX tiles), ``avx512_bf16`` (AVX-512 VNNI
    and BF16), ``avx512_vnni``, ``avx512`` (AVX-512 without VNNI: u8 x s8 products summed in
    int16, rescaled), ``avx2_vnni``, ``avx2``, or ``other`` (another architecture, or an x86 CPU
    below AVX2). With
    ``honour_onednn_cap``, capped by ``ONEDNN_MAX_CPU_ISA`` as oneDNN caps its kernels (a cap
    only lowers the class: it cannot give a CPU an instruction it lacks)."""
    import os
    import platform

    flags = cpu_flags() or frozenset()
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        found = "other"
    elif "amx_int8" in flags and "avx512f" in flags:
        found = "amx"
    elif "avx512_vnni" in flags and "avx512_bf16" in flags:
        found = "avx512_bf16"
    elif "avx512_vnni" in flags:
        found = "avx512_vnni"
    elif "avx512bw" in flags:
        found = "avx512"
    elif "avx_vnni" in flags:
        found = "avx2_vnni"
    elif "avx2" in flags:
        found = "avx2"
    else:
        found = "other"
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip().upper() if honour_onednn_cap else ""
    capped = dict(_CAPS).get(cap)
    if capped is None:  # unset, DEFAULT, an AMX level, or a value oneDNN does not know
        return found
    if capped == "avx2_vnni" and found == "avx512":  # AVX-512 without any VNNI
        return "avx2"
    return min(found, capped, key=CLASSES.index)
