"""fp32 against bf16 matmul throughput (torch and JAX), and what activation checkpointing saves and costs.

bf16 is sized from the CPU flags: where the CPU has no bf16 units (``course_utils.env.has_native_bf16()`` is
False) bf16 is emulated and can be hundreds of times slower, so its matrices stay small there.
Recorded: GFLOP/s per framework and dtype, the bf16/fp32 speed ratio, and for a stack of residual MLP blocks
the bytes saved for backward, the peak memory of a training step, and the step time, each without and with
checkpointing (torch.utils.checkpoint; jax.checkpoint residuals from ``compile().memory_analysis()``).
"""

from __future__ import annotations

MIN_TIME = 0.5

# Vendors' dense (no sparsity) bf16 tensor-core peaks in TFLOP/s, quoted from their data sheets: claims, used only
# to say what fraction of the advertised peak a measured matmul reached. GPUs not listed get no fraction.
VENDOR_BF16_TFLOPS = {"H200": 989.0, "H100 SXM": 989.0, "H100 PCIe": 756.0, "A100": 312.0, "L4": 121.0}


def _peak_bf16(device: str) -> tuple[float | None, str]:
    """(peak FLOP/s, what it is) for the bf16 fraction: the vendor's claim on a listed GPU, the computed fp32
    peak on a CPU (bf16 units can exceed it: they do two bf16 products per fp32 lane), else None."""
    if device == "cuda":
        import torch

        name = torch.cuda.get_device_name()
        claim = next((v for k, v in VENDOR_BF16_TFLOPS.items() if all(w in name for w in k.split())), None)
        return (claim * 1e12 if claim else None), f"of the vendor's dense bf16 peak for {name} (a claim)"
    from course_utils.measuring.peak import theoretical_peak

    return theoretical_peak().flops, "of the computed fp32 peak"


def _matmuls(native: bool) -> dict:
    import jax
    import jax.numpy as jnp
    import torch

    from course_utils import timing

    device = "cuda" if torch.cuda.is_available() else "cpu"
    out: dict = {}
    for n in ((512, 2048) if native or device == "cuda" else (128, 256)):
        a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
        dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16} | ({"fp16": torch.float16} if device == "cuda" else {})
        for name, dt in dtypes.items():
            m = timing.benchmark(torch.mm, a.to(dt), b.to(dt), min_time=MIN_TIME, max_repeats=50)
            out[f"torch {name} n={n} GFLOP/s"] = 2 * n**3 / m.median / 1e9
        ja, jb = jnp.asarray(a.cpu().numpy()), jnp.asarray(b.cpu().numpy())
        mm = jax.jit(jnp.matmul)
        for name, dt in (("fp32", jnp.float32), ("bf16", jnp.bfloat16)):
            m = timing.benchmark(mm, ja.astype(dt), jb.astype(dt), min_time=MIN_TIME, max_repeats=50)
            out[f"jax {name} n={n} GFLOP/s"] = 2 * n**3 / m.median / 1e9
        for fw in ("torch", "jax"):
            out[f"{fw} bf16/fp32 speed n={n}"] = out[f"{fw} bf16 n={n} GFLOP/s"] / out[f"{fw} fp32 n={n} GFLOP/s"]
    peak, what = _peak_bf16(device)
    if peak:
        for n in ((512, 2048) if native or device == "cuda" else (128, 256)):
            out[f"torch bf16 n={n} fraction {what}"] = out[f"torch bf16 n={n} GFLOP/s"] * 1e9 / peak
    out["device"] = device
    return out


def _checkpointing(width: int = 256, blocks: int = 8, batch: int = 1024) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    from course_utils import memory, timing

    rng = np.random.default_rng(0)
    weights = [((rng.standard_normal((width, 4 * width)) / np.sqrt(width)).astype(np.float32),
                (rng.standard_normal((4 * width, width)) / np.sqrt(4 * width) / blocks).astype(np.float32))
               for _ in range(blocks)]
    tw = [torch.tensor(w, requires_grad=True) for pair in weights for w in pair]
    tx = torch.ones(batch, width)

    def block(h, w1, w2):
        return h + F.gelu(h @ w1) @ w2

    def loss(remat):
        h = tx
        for i in range(0, len(tw), 2):
            h = checkpoint(block, h, tw[i], tw[i + 1], use_reentrant=False) if remat else block(h, tw[i], tw[i + 1])
        return (h**2).mean()

    def step(remat):
        for p in tw:
            p.grad = None
        loss(remat).backward()

    jw = [(jnp.asarray(a), jnp.asarray(b)) for a, b in weights]
    jx = jnp.ones((batch, width))

    def jloss(params, x, remat):
        f = jax.checkpoint(lambda p, h: h + jax.nn.gelu(h @ p[0]) @ p[1]) if remat else (
            lambda p, h: h + jax.nn.gelu(h @ p[0]) @ p[1])
        for p in params:
            x = f(p, x)
        return jnp.mean(x**2)

    out: dict = {"width": width, "blocks": blocks, "batch": batch}
    for remat in (False, True):
        tag = "with" if remat else "without"
        out[f"torch saved bytes {tag}"] = memory.saved_activation_bytes(lambda r=remat: loss(r), exclude=tw)
        out[f"torch peak RSS bytes {tag}"] = memory.torch_peak_bytes(lambda r=remat: step(r), "cpu")
        out[f"torch step s {tag}"] = timing.benchmark(step, remat, min_time=MIN_TIME, max_repeats=20).median
        fn = lambda p, x, r=remat: jloss(p, x, r)  # noqa: E731
        residuals = memory.jax_memory(lambda p, x, f=fn: jax.vjp(f, p, x)[1], jw, jx)["output"]
        out[f"jax vjp residual bytes {tag}"] = residuals - sum(a.nbytes for a in jax.tree.leaves(jw))  # no weights
        grad = jax.jit(jax.grad(fn))
        out[f"jax step temp bytes {tag}"] = memory.jax_memory(grad, jw, jx)["temp"]
        out[f"jax step s {tag}"] = timing.benchmark(grad, jw, jx, min_time=MIN_TIME, max_repeats=20).median
    out["torch saved ratio"] = out["torch saved bytes with"] / out["torch saved bytes without"]
    if out["torch peak RSS bytes without"]:
        out["torch peak ratio"] = out["torch peak RSS bytes with"] / out["torch peak RSS bytes without"]
    out["torch step time ratio"] = out["torch step s with"] / out["torch step s without"]
    out["jax residual ratio"] = out["jax vjp residual bytes with"] / out["jax vjp residual bytes without"]
    out["jax step time ratio"] = out["jax step s with"] / out["jax step s without"]
    return out


def run() -> dict:
    from course_utils import env

    native = env.has_native_bf16()
    return {
        "simd_flags": list(env.simd_flags()),
        "native_bf16": native,
        "matmul": _matmuls(native),
        "checkpointing": _checkpointing(),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
