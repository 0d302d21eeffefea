"""One torch matmul in fp32 and one in bf16, so that the libraries behind them say what ran.

Notebook 03 runs it with MKL_VERBOSE=1 and ONEDNN_VERBOSE=1 in its environment (cu.precision.library_verbose):
MKL then prints its version and the code path it chose for this CPU, and one line per SGEMM call; oneDNN prints
the ISA it detected and one line per primitive it executed (for a bf16 matmul, which kernel: e.g. AMX or AVX-512).
Usage: python blas_verbose.py N
"""

import sys

import torch

if __name__ == "__main__":
    n = int(sys.argv[1])
    a = torch.randn(n, n)
    torch.mm(a, a)  # fp32: ATen hands it to the BLAS it was built with (MKL in the x86 wheels)
    torch.mm(a.bfloat16(), a.bfloat16())  # bf16: oneDNN where the CPU supports it, else ATen's own loop
    print(f"blas_verbose: two {n}x{n} matmuls done (fp32, bf16) with torch {torch.__version__}", flush=True)
