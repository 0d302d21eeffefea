"""One torch matmul in fp32 and one in bf16 (``python blas_verbose.py N``), run by notebook 03 with MKL_VERBOSE=1 and
ONEDNN_VERBOSE=1 so that the libraries say which code path and kernels ran."""

import sys

import torch

if __name__ == "__main__":
    n = int(sys.argv[1])
    a = torch.randn(n, n)
    torch.mm(a, a)  # fp32: ATen hands it to the BLAS it was built with (MKL in the x86 wheels)
    torch.mm(a.bfloat16(), a.bfloat16())  # bf16: oneDNN where the CPU supports it, else ATen's own loop
    print(f"blas_verbose: two {n}x{n} matmuls done (fp32, bf16) with torch {torch.__version__}", flush=True)
