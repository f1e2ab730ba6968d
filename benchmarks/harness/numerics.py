"""Pinned numerics for the benchmarks that compare runs, so that a seed takes the same path on any AVX2 host.

A run's path is chaotic in its first model fits (a handful of points in 16 dimensions on Swimmer): the kernels
each library picks for the host's vector unit round differently, and a different point follows. On one host,
la-minucb's Swimmer seed 4 took three different 17th points under MKL's AVX-512, AVX2 and compatible paths, and
the committed run, made on another host with the same code, a fourth (league_findings.md, "Another machine,
another path"). Each variable below pins one library's choice to AVX2 (x86-64-v3), which every host we run on
has. ``pin`` uses ``setdefault``: a variable the caller set wins. Call it before numpy or torch is imported;
``describe`` says what the process runs with, for a results file's header. The speed benchmarks do not pin: they
time what a user's process would run.
"""

from __future__ import annotations

import os

NUMPY_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"  # numpy 2's dispatch targets above x86-64-v3
PINNED = {
    "MKL_CBWR": "AVX2",  # torch's BLAS and LAPACK (MKL): Intel's conditional numerical reproducibility, AVX2 branch
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",  # and its dispatch, which an explicit AVX512 here would take over CBWR
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # torch's oneDNN kernels
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's and scipy's BLAS (OpenBLAS), Haswell = AVX2
    "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512,  # numpy's own SIMD loops
    # one BLAS thread a run: runs go side by side in processes, and a threaded reduction rounds by its split
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def pin() -> None:
    for name, value in PINNED.items():
        os.environ.setdefault(name, value)


def describe() -> str:
    """The kernels this process runs with (imports torch), e.g. "numerics: torch AVX2, MKL_CBWR AVX2, ...", ending
    in "(not pinned: native kernels)" where ``pin`` did not run before torch loaded."""
    import torch

    parts = [f"torch {torch.backends.cpu.get_cpu_capability()}"]
    labels = (("MKL_CBWR", "MKL_CBWR"), ("MKL_ENABLE_INSTRUCTIONS", "MKL"), ("OPENBLAS_CORETYPE", "OpenBLAS"),
              ("ONEDNN_MAX_CPU_ISA", "oneDNN"))  # fmt: skip
    for name, label in labels:
        if os.environ.get(name):
            parts.append(f"{label} {os.environ[name]}")
    if os.environ.get("NPY_DISABLE_CPU_FEATURES"):
        parts.append(f"numpy without {os.environ['NPY_DISABLE_CPU_FEATURES']}")
    pinned = all(os.environ.get(name) for name in ("MKL_CBWR", "ATEN_CPU_CAPABILITY"))
    return f"numerics: {', '.join(parts)}{'' if pinned else ' (not pinned: native kernels)'}"


def cpu_model() -> str:
    """The host's CPU model as Linux names it ("Intel(R) Xeon(R) Processor"), else the machine type: a run's path can
    differ between hosts even with pinned kernels, so a results file says which one it ran on."""
    import platform

    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
