"""Notebook 02 (operator fusion): why a fused kernel is faster, and by how much it should be.

The notebook writes the compiled variants itself; this package measures, counts and explains them:
- ``traffic``: the bytes and FLOPs an op chain moves unfused and fused (``trace_traffic``), the roofline time
  they predict beside measured times (``compare_to_prediction``), FlopCounterMode's count (``torch_counted_flops``);
- ``attention``: one score matrix, and the bytes a blocked attention kernel reads given its block mask
  (``attention_bytes``);
- ``readers``: kernels in a profiler trace (``trace_kernels``) and their busy time (``kernel_busy_share``), a
  compiler's refusal as a name (``compile_error``); the compilers' own output is read by ``course_utils.compiled``;
- ``variants``: the chain per framework (``chain``), the names of its variants (``EAGER``, ``FUSED``, ``INTO``), and
  section 3's reused-buffer recipe as one function for probes and later notebooks (``into_buffer``);
- ``vector_roof``: each framework's in-cache multiply-add and tanh rates (``measure_vector_roof``), what limits a
  chain (``chain_roofs``) and its table (``vector_roof_table``);
- ``custom_ops``: a legacy NumPy operator and its per-framework wrappers;
- ``findings``: the notebook's predictions, each declared once with a sentence per outcome (``CHAIN.score(...)``);
- ``plots``: the notebook's figures; ``exercises``: the checkers of exercises 02.1-02.3.

Graph breaks are counted by ``course_utils.graphs.torch_graph_breaks`` (notebook 01's package).
"""

from course_utils.fusion import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.fusion import findings
from course_utils.fusion.attention import attention_bytes
from course_utils.fusion.custom_ops import (
    chain_with_callback_jax,
    chain_with_numpy_function_tf,
    legacy_tanh_torch,
    table_tanh_np,
)
from course_utils.fusion.plots import prediction_plot, roof_bars, roofline_with_vector_roof, speedup_vs_size_plot
from course_utils.fusion.readers import compile_error, kernel_busy_share, trace_kernels
from course_utils.fusion.traffic import compare_to_prediction, torch_counted_flops, trace_traffic
from course_utils.fusion.variants import EAGER, FUSED, INTO, chain
from course_utils.fusion.vector_roof import chain_roofs, measure_vector_roof, vector_roof_table

__all__ = [
    "EAGER", "FUSED", "INTO", "attention_bytes", "chain", "chain_roofs", "chain_with_callback_jax",
    "chain_with_numpy_function_tf", "compare_to_prediction", "compile_error", "findings", "kernel_busy_share",
    "legacy_tanh_torch", "measure_vector_roof", "prediction_plot", "roof_bars", "roofline_with_vector_roof",
    "speedup_vs_size_plot", "table_tanh_np", "torch_counted_flops", "trace_kernels", "trace_traffic",
    "vector_roof_table",
]
