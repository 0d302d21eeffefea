"""What does compiling the recurring workload cost, and what does it save, in each framework?

For the gelu chain (``course_utils.models.chain_for``) at a few sizes and the tiny MLP's training step, per
framework: warm-up (the compiled function's first call, trace + compile), steady-state time per call eager
and compiled, the speed-up, and the break-even number of calls (``course_utils.graphs.break_even``).
PyTorch's first compile in a process also loads Inductor; it is recorded separately as ``torch_first_compile``.
"""

from __future__ import annotations

import math
import time

import numpy as np

MIN_TIME = 0.3
CHAIN_SIZES = (2**8, 2**16, 2**20)
BATCH = 1024
LR = 0.1


def _pair(eager_fn, compiled_fn, args) -> dict:
    from course_utils import graphs, timing

    compiled = timing.benchmark(compiled_fn, *args, min_time=MIN_TIME)  # first: its first call is the compile
    eager = timing.benchmark(eager_fn, *args, min_time=MIN_TIME)
    return {
        "warmup_s": compiled.first_call,
        "eager_s": eager.median,
        "compiled_s": compiled.median,
        "speedup": eager.median / compiled.median,
        "break_even_calls": None if math.isinf(n := graphs.break_even(eager, compiled)) else n,  # None: never
    }


def _compilers():
    import jax
    import torch

    from course_utils import env

    tf = env.import_tensorflow()
    return {
        "torch": lambda f: torch.compile(f, dynamic=False),
        "jax": jax.jit,
        "tensorflow": lambda f: tf.function(f, jit_compile=True),
    }


def _train_steps(framework: str):
    """(eager step, compiled step, args) of the tiny MLP on one fixed batch; each step returns the loss."""
    from course_utils import data, graphs, models

    x_np, y_np = data.classification(BATCH)
    x, y = graphs.to_framework(framework, x_np), graphs.to_framework(framework, y_np)
    if framework == "torch":
        import torch

        def make(compiled: bool):
            model = models.torch_mlp().to(x.device)
            params = {k: v.detach() for k, v in model.named_parameters()}

            def loss_fn(p, x, y):
                return torch.nn.functional.cross_entropy(torch.func.functional_call(model, p, (x,)), y)

            def update(p, x, y):
                grads, loss = torch.func.grad_and_value(loss_fn)(p, x, y)
                return {k: v - LR * grads[k] for k, v in p.items()}, loss

            update = torch.compile(update) if compiled else update

            def step(x, y):
                new, loss = update(params, x, y)
                params.update(new)
                return loss
            return step
        return make(False), make(True), (x, y)
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        def loss_fn(p, x, y):
            logp = jax.nn.log_softmax(models.jax_mlp_apply(p, x))
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

        def update(p, x, y):
            loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
            return jax.tree.map(lambda a, g: a - LR * g, p, grads), loss

        def make(compiled: bool):
            state = {"p": models.jax_mlp_params()}
            fn = jax.jit(update) if compiled else update

            def step(x, y):
                state["p"], loss = fn(state["p"], x, y)
                return loss
            return step
        return make(False), make(True), (x, y)
    import keras

    from course_utils import env

    tf = env.import_tensorflow()

    def make(compiled: bool):
        model, opt = models.keras_mlp(), keras.optimizers.SGD(LR)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return tf.function(step, jit_compile=True) if compiled else step
    return make(False), make(True), (x, y)


def run() -> dict:
    """Warm-up, steady-state speed-up and break-even calls per framework (gelu chain sizes, train step)."""
    import torch

    from course_utils import graphs, models

    results: dict = {}
    start = time.perf_counter()
    warm = torch.compile(lambda x: x * 2.0 + 1.0)
    warm(torch.ones(8))
    results["torch_first_compile_s"] = time.perf_counter() - start
    for framework, compile_fn in _compilers().items():
        chain = models.chain_for(framework)
        per_size = {}
        for n in CHAIN_SIZES:
            rng = np.random.default_rng(n)
            args = tuple(graphs.to_framework(framework, rng.standard_normal(n, dtype=np.float32)) for _ in range(2))
            # a fresh wrapper per size, so that every warm-up is a real compilation
            per_size[str(n)] = _pair(chain, compile_fn(graphs.fresh_function(chain)), args)
        eager_step, compiled_step, args = _train_steps(framework)
        results[framework] = {"gelu_chain": per_size, "train_step": _pair(eager_step, compiled_step, args)}
    return results


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
