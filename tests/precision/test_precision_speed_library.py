"""course_utils.precision.speed: the CPU vendor, and what MKL and oneDNN print, read from the worker's output."""

from __future__ import annotations

import pytest

from course_utils import precision as P

INTEL = """MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture Intel(R) Advanced \
Vector Extensions 512 (Intel(R) AVX-512) with support for INT8, BF16, FP16 (limited) instructions, and Intel(R) \
Advanced Matrix Extensions (Intel(R) AMX) with INT8 and BF16, Lnx 2.60GHz lp64 gnu_thread
MKL_VERBOSE SGEMM(N,N,256,256,256,0x7ff,0x563,256,0x563,256,0x7ff,0x563,256) 30.04ms CNR:OFF Dyn:1 FastMM:1 NThr:2
onednn_verbose,v1,info,oneDNN v3.12.0 (commit 80afa71049cd69a3df32adcccb623b12cd7baa22)
onednn_verbose,v1,info,cpu,isa:Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support
onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx10_1_512_amx,undef,src:bf16::blocked:ab::f0 \
wei:bf16::blocked:ab::f0 dst:bf16::blocked:ab::f0,attr-scratchpad:user,,256x256:256x256,0.297119
blas_verbose: two 256x256 matmuls done (fp32, bf16) with torch 2.13.0+cpu
"""
AMD = """MKL_VERBOSE Intel(R) MKL 2020.0 Product build 20191122 for Intel(R) 64 architecture Intel(R) Advanced \
Vector Extensions 2 (Intel(R) AVX2) enabled processors, Lnx 2.45GHz lp64 gnu_thread
MKL_VERBOSE SGEMM(N,N,256,256,256,0x7ff,0x563,256,0x563,256,0x7ff,0x563,256) 1.10ms CNR:OFF Dyn:1 FastMM:1 TID:0  NThr:2
onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions
blas_verbose: two 256x256 matmuls done (fp32, bf16) with torch 2.13.0+cpu
"""


def test_read_verbose_names_the_path_and_the_kernels() -> None:
    r = P.speed.read_verbose(INTEL)
    assert r.mkl_version.startswith("oneMKL 2024.0")
    assert r.mkl_path.startswith("Intel(R) Advanced Vector Extensions 512")
    assert r.mkl_calls == (("SGEMM", "30.04ms"),) and r.mkl_ran
    assert ("brg_matmul:avx10_1_512_amx", "bf16") in r.onednn_matmuls and "AMX" in r.onednn_isa
    assert len(r.lines) == 4 and "SGEMM" in r.excerpt()
    amd = P.speed.read_verbose(AMD)
    assert "AVX2" in amd.mkl_path and all(src != "bf16" for _, src in amd.onednn_matmuls)
    assert amd.onednn_isa.startswith("Intel AVX-512")


def test_read_verbose_without_library_lines_reports_none() -> None:
    r = P.speed.read_verbose("blas_verbose: two 16x16 matmuls done (fp32, bf16) with torch x\n")
    assert not r.mkl_ran and r.mkl_path is None and not r.onednn_matmuls and r.onednn_isa is None
    assert "neither" in r.excerpt()


def test_read_verbose_refuses_text_that_is_not_the_workers() -> None:
    with pytest.raises(ValueError, match="text"):
        P.speed.read_verbose("MKL_VERBOSE SGEMM(...) 1ms")
    with pytest.raises(TypeError, match="text"):
        P.speed.read_verbose(None)


def test_cpu_vendor_reads_vendor_id() -> None:
    assert P.cpu_vendor("processor : 0\nvendor_id\t: GenuineIntel\n") == "Intel"
    assert P.cpu_vendor("vendor_id : AuthenticAMD\n") == "AMD"
    assert P.cpu_vendor("CPU implementer : 0x41\n") == "other"
    assert P.cpu_vendor() in ("Intel", "AMD", "other")


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_library_verbose_runs_the_worker() -> None:
    pytest.importorskip("torch")
    r = P.library_verbose(32)
    assert isinstance(r, P.speed.LibraryReport)
    import torch

    if torch.backends.mkl.is_available() and torch.backends.cpu.get_cpu_capability() != "DEFAULT":
        assert r.mkl_ran  # an x86 wheel with MKL prints its SGEMM line
