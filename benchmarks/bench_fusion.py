"""Fusion benchmark: how close the fused gelu chain comes to the machine's copy bandwidth, per framework.

For each installed framework, at the default size (``env.pick``): the machine's bandwidth measured with that
framework (``roofline.measure_machine``), the fused chain's time with a fresh output and with a reused
output (torch ``out=``, JAX buffer donation; TensorFlow cannot reuse), and the achieved bandwidth
(inputs read once + output written once, per call) as a fraction of the copy bandwidth. A memory-bound
fused kernel should reach >= 0.8 of it; the fractions say where it does not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import env, fusion, models, roofline, timing

COLS = 1024


def _copy_bandwidth(machine: roofline.Machine) -> tuple[str, float]:
    """The copy probe where the framework has one, else scale (a copy with one multiply)."""
    for name in ("copy", "scale"):
        if name in machine.bandwidth_probes:
            return name, machine.bandwidth_probes[name]
    name = min(machine.bandwidth_probes, key=machine.bandwidth_probes.get)
    return name, machine.bandwidth_probes[name]


def _torch(x: np.ndarray, bias: np.ndarray) -> dict[str, Any]:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    chain = models.chain_for("torch")
    xt, bt = torch.from_numpy(x).to(device), torch.from_numpy(bias).to(device)
    out = torch.empty_like(xt)
    fresh = torch.compile(chain)
    into = torch.compile(lambda a, b, o: o.copy_(chain(a, b)))
    reference = chain(xt, bt).cpu().numpy()
    assert np.allclose(fresh(xt, bt).cpu().numpy(), reference, atol=1e-4)
    assert np.allclose(into(xt, bt, out).cpu().numpy(), reference, atol=1e-4)
    return {"fresh": timing.benchmark(fresh, xt, bt), "reused": timing.benchmark(into, xt, bt, out)}


def _jax(x: np.ndarray, bias: np.ndarray) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    chain = models.chain_for("jax")
    xj, bj = jnp.asarray(x), jnp.asarray(bias)
    fresh = jax.jit(chain)
    donating = jax.jit(lambda a, b, buffer: chain(a, b), donate_argnums=2, keep_unused=True)  # else not donated
    state = {"buffer": jnp.zeros_like(xj)}

    def reused() -> Any:
        state["buffer"] = donating(xj, bj, state["buffer"])
        return state["buffer"]

    reference = models.gelu_chain(x, bias, np.tanh)
    assert np.allclose(np.asarray(fresh(xj, bj)), reference, atol=1e-4)
    assert np.allclose(np.asarray(reused()), reference, atol=1e-4)
    return {"fresh": timing.benchmark(fresh, xj, bj), "reused": timing.benchmark(reused)}


def _tensorflow(x: np.ndarray, bias: np.ndarray) -> dict[str, Any]:
    tf = env.import_tensorflow()
    chain = models.chain_for("tensorflow")
    xt, bt = tf.constant(x), tf.constant(bias)
    fresh = tf.function(chain, jit_compile=True)
    assert np.allclose(fresh(xt, bt).numpy(), models.gelu_chain(x, bias, np.tanh), atol=1e-4)
    return {"fresh": timing.benchmark(fresh, xt, bt)}


_RUNNERS = {"torch": _torch, "jax": _jax, "tensorflow": _tensorflow}


def run() -> dict:
    rows = env.pick(ci=8192, cpu=16384, gpu=262144, tpu=65536)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, COLS), dtype=np.float32)
    bias = rng.standard_normal(COLS, dtype=np.float32)
    traffic = fusion.trace_traffic(models.chain_for("torch"), ((rows, COLS), "float32"), ((COLS,), "float32"))
    result: dict[str, Any] = {
        "elements": rows * COLS,
        "eager_ops": traffic.n_ops,
        "fused_bytes": traffic.fused_bytes,
        "unfused_bytes": traffic.unfused_bytes,
        "target_fraction": 0.8,
    }
    for framework in env.installed_frameworks():
        machine = roofline.measure_machine(framework)
        probe, copy_bw = _copy_bandwidth(machine)
        entry: dict[str, Any] = {"copy_probe": probe, "copy_bandwidth": copy_bw, "best_bandwidth": machine.bandwidth}
        for kind, measurement in _RUNNERS[framework](x, bias).items():
            achieved = traffic.fused_bytes / measurement.median
            entry[kind] = {
                "seconds": measurement.median,
                "achieved_bandwidth": achieved,
                "fraction_of_copy": achieved / copy_bw,
                "fraction_of_best": achieved / machine.bandwidth,
            }
        result[framework] = entry
    return result


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
