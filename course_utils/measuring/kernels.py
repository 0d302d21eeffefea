"""Which library runs each framework's fp32 matmul: the reason two frameworks differ on the same machine.

Found, not assumed: PyTorch from its build configuration (``torch.__config__.show()``), NumPy from
``numpy.show_config``, JAX and TensorFlow from the optimised HLO that XLA compiled for the matmul (a
``__ynn_fusion`` hands the dot to YNNPACK, a ``__onednn`` custom call to oneDNN, a ``__cublas`` call to
cuBLAS; a plain ``dot`` stays with XLA's own CPU runtime, which runs it with Eigen).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from course_utils import compiled, declare, display, env, validate


@dataclass(frozen=True)
class KernelLibrary:
    """One framework's matmul library and the evidence for it."""

    framework: str
    library: str
    evidence: str

    def __post_init__(self) -> None:
        validate.text("framework", self.framework)
        validate.text("library", self.library)
        validate.instance("evidence", self.evidence, str)


def _from_hlo(framework: str, hlo: str) -> KernelLibrary:
    return KernelLibrary(framework, *compiled.hlo_summary(hlo).library())


def torch_library() -> KernelLibrary:
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


def numpy_library() -> KernelLibrary:
    """NumPy: the BLAS named by ``numpy.show_config``."""
    import numpy as np

    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    library = f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    return KernelLibrary("numpy", library, "numpy.show_config()")


def jax_library(n: int = 512) -> KernelLibrary:
    """JAX: what XLA compiled ``jnp.matmul`` of two n x n fp32 arrays into."""
    import jax
    import jax.numpy as jnp

    n = validate.number("n", n, low=2, high=16384, integer=True)
    x = jnp.ones((n, n), jnp.float32)
    return _from_hlo("jax", jax.jit(jnp.matmul).lower(x, x).compile().as_text())


def tensorflow_library(n: int = 512) -> KernelLibrary:
    """TensorFlow: what XLA compiled ``tf.linalg.matmul`` (``jit_compile=True``) into."""
    tf = env.import_tensorflow()
    n = validate.number("n", n, low=2, high=16384, integer=True)
    x = tf.ones((n, n))
    matmul = tf.function(lambda a, b: tf.linalg.matmul(a, b), jit_compile=True)
    return _from_hlo("tensorflow", matmul.experimental_get_compiler_ir(x, x)(stage="optimized_hlo"))


@declare.checked
def matmul_libraries(frameworks: Annotated[Sequence[str], declare.NonEmpty, declare.Unique],
                     n: Annotated[int, declare.Range(2, 16384)] = 512) -> list[KernelLibrary]:
    """The library behind each framework's fp32 matmul (n x n, the size matters for XLA's choice)."""
    found = []
    for name in frameworks:
        if isinstance(name, str) and name.strip().lower() == "numpy":
            found.append(numpy_library())
            continue
        framework = validate.framework(name, "frameworks")
        found.append({"torch": torch_library, "jax": lambda: jax_library(n),
                      "tensorflow": lambda: tensorflow_library(n)}[framework]())
    return found


def libraries_table(libraries: list[KernelLibrary], flops: dict[str, float] | None = None) -> display.Table:
    """One row per framework: library, evidence, and the matmul FLOP/s measured with it (when given)."""
    validate.non_empty("libraries", libraries)
    for i, lib in enumerate(libraries):
        validate.instance(f"libraries[{i}]", lib, KernelLibrary)
    flops = {k: validate.positive(f"flops[{k!r}]", v) for k, v in validate.instance("flops", flops or {}, dict).items()}
    rows = [(lib.framework, lib.library, display.format_flops(flops[lib.framework]) if lib.framework in flops
             else "not measured", lib.evidence) for lib in libraries]
    return display.table(["framework", "fp32 matmul library", "measured matmul", "how we know"], rows,
                         title="Who runs the matmul")
