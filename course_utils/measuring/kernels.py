"""Which library runs each framework's fp32 matmul, found rather than assumed: PyTorch's and NumPy's build
configuration, and for JAX and TensorFlow the optimised HLO that XLA compiled for the matmul."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from course_utils import compiled, declare, display, env
from course_utils.declare import NonEmpty, PositiveFloat, Range

Size = Annotated[int, Range(2, 16384)]


@declare.checked
@dataclass(frozen=True)
class KernelLibrary:
    """One framework's matmul library and the evidence for it."""

    framework: declare.Text
    library: declare.Text
    evidence: str


def _from_hlo(framework: str, hlo: str) -> KernelLibrary:
    return KernelLibrary(framework, *compiled.hlo_summary(hlo).library())


def _torch_library() -> KernelLibrary:
    """PyTorch: the BLAS it was built with (BLAS_INFO), and its versions, from ``torch.__config__.show()``."""
    import torch

    if torch.cuda.is_available():
        return KernelLibrary("torch", "cuBLAS", "torch.cuda is available: fp32 matmuls go to cuBLAS")
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    name = blas.group(1) if blas else "unknown"
    if name == "mkl":  # MKL's own version line, as it reports it (MKL_Get_Version_String): one spelling
        version = re.search(r"(Intel\(R\)[^\n]*?Math Kernel Library Version \S+(?: Build \d+)?)", config)
        library = version.group(1) if version else "Intel MKL (version not reported)"
    else:
        library = name
    dnn = re.search(r"MKL-DNN (v[\w.]+)", config)
    extra = f"; oneDNN {dnn.group(1)} is built in too (used for bf16 and convolutions)" if dnn else ""
    return KernelLibrary("torch", library, f"BLAS_INFO={name} in torch.__config__.show(){extra}")


def _numpy_library() -> KernelLibrary:
    """NumPy: the BLAS named by ``numpy.show_config``."""
    import numpy as np

    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    library = f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    return KernelLibrary("numpy", library, "numpy.show_config()")


def _jax_library(n: int) -> KernelLibrary:
    """JAX: what XLA compiled ``jnp.matmul`` of two n x n fp32 arrays into."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones((n, n), jnp.float32)
    return _from_hlo("jax", jax.jit(jnp.matmul).lower(x, x).compile().as_text())


def _tensorflow_library(n: int) -> KernelLibrary:
    """TensorFlow: what XLA compiled ``tf.linalg.matmul`` (``jit_compile=True``) into."""
    tf = env.import_tensorflow()
    x = tf.ones((n, n))
    matmul = tf.function(lambda a, b: tf.linalg.matmul(a, b), jit_compile=True)
    return _from_hlo("tensorflow", matmul.experimental_get_compiler_ir(x, x)(stage="optimized_hlo"))


@declare.checked
def matmul_libraries(frameworks: Annotated[Sequence[Literal["torch", "jax", "tensorflow", "numpy"]], NonEmpty,
                                           declare.Unique], n: Size = 512) -> list[KernelLibrary]:
    """The library behind each framework's fp32 matmul (n x n, the size matters for XLA's choice)."""
    found = {"numpy": _numpy_library, "torch": _torch_library, "jax": lambda: _jax_library(n),
             "tensorflow": lambda: _tensorflow_library(n)}
    return [found[name]() for name in frameworks]


@declare.checked
def libraries_table(libraries: Annotated[Sequence[KernelLibrary], NonEmpty],
                    flops: dict[str, PositiveFloat] | None = None) -> display.Table:
    """One row per framework: library, evidence, and the matmul FLOP/s measured with it (when given)."""
    flops = flops or {}
    rows = [(lib.framework, lib.library, display.format_flops(flops[lib.framework]) if lib.framework in flops
             else "not measured", lib.evidence) for lib in libraries]
    return display.table(["framework", "fp32 matmul library", "measured matmul", "how we know"], rows,
                         title="Who runs the matmul")
