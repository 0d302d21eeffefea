"""Multi-process JAX (``cu.beyond.jaxmulti.run``): one global mesh over every process's CPU devices, each process
loading its rows; saves its parameters, records the step's all-reduces, times the step, its compute and all-reduces."""

import argparse
import re

import numpy as np

from course_utils import compiled, data, models
from course_utils.distributed import worker


def join(port: int, devices: int):
    """Join the job (before any other JAX call) and return ONE mesh over the devices of all its processes."""
    import jax

    jax.config.update("jax_platforms", "cpu")  # on a GPU/TPU cluster: drop this line, the accelerators are used
    jax.config.update("jax_num_cpu_devices", devices)  # this process's CPU devices
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}",  # on a cluster: node 0's address
                               num_processes=worker.world_size(), process_id=worker.rank())
    return jax.make_mesh((jax.device_count(),), ("data",),  # jax.devices() lists every process's devices
                         axis_types=(jax.sharding.AxisType.Explicit,))  # explicit: older JAX defaults to Auto


def local_rows(sharding, x_all, y_all, s: int, batch: int):
    """This process loads only its rows of global batch ``s``; JAX assembles the global arrays from them."""
    import jax

    per = batch // jax.process_count()
    lo = s * batch + jax.process_index() * per
    return (jax.make_array_from_process_local_data(sharding, x_all[lo:lo + per], (batch, x_all.shape[1])),
            jax.make_array_from_process_local_data(sharding, y_all[lo:lo + per], (batch,)))


def timer(fn, *args):
    """A call that runs ``fn(*args)`` to completion (``block_until_ready``)."""
    import jax

    return lambda: jax.block_until_ready(fn(*args))


def operand_sizes(lines: list[str]) -> list[int]:
    """Element counts of the operands of the step's all-reduce(s), read from their result shapes in the HLO
    (``(f32[64]{0}, f32[64,32]{1,0}, ...) all-reduce(...)``); a scalar counts 1."""
    sizes = []
    for line in lines:
        for dims in re.findall(r"\b[a-z]+\d*\[([\d,]*)\]", line.split(" all-reduce", 1)[0]):
            sizes.append(int(np.prod([int(d) for d in dims.split(",") if d])))
    return sizes


def summed_rows(mesh, sizes: list[int]):
    """One all-reduce over the global mesh, alone: each device holds one row of a (devices, n) array per size, and
    summing the rows into replicated results is one all-reduce (of a tuple when there are several arrays)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    rows = [jax.make_array_from_callback((jax.device_count(), n), NamedSharding(mesh, P("data")),
                                         lambda idx, n=n: np.ones((1, n), np.float32)) for n in sizes]
    total = jax.jit(lambda *a: [jnp.sum(x, axis=0) for x in a], out_shardings=NamedSharding(mesh, P()))
    jax.block_until_ready(total(*rows))  # compile
    return timer(total, *rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="the JAX coordinator's port on 127.0.0.1")
    parser.add_argument("--devices", type=int, default=2, help="CPU devices per process")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all processes together)")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=6, help="timing rounds, the timed calls in turns")
    parser.add_argument("--per-round", type=int, default=3, help="calls timed per round")
    args = parser.parse_args()
    mesh = join(args.port, args.devices)
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    me, nproc = jax.process_index(), jax.process_count()
    worker.progress(0, args.steps, f"{nproc} processes, {jax.local_device_count()} local devices each, "
                                   f"{jax.device_count()} in the global mesh")

    def loss_fn(params, x, y):
        logits = models.jax_mlp_apply(params, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - args.lr * g, params, grads), loss

    replicated, by_batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    params = jax.tree.map(lambda a: jax.make_array_from_callback(a.shape, replicated, lambda idx, a=a: a[idx]),
                          [{k: np.asarray(v) for k, v in layer.items()} for layer in models.jax_mlp_params()])
    x_all, y_all = data.classification(args.steps * args.batch, seed=6)
    for s in range(args.steps):
        params, loss = train_step(params, *local_rows(by_batch, x_all, y_all, s, args.batch))
        worker.progress(s + 1, args.steps)
    x, y = local_rows(by_batch, x_all, y_all, 0, args.batch)
    hlo = compiled.hlo_summary(train_step.lower(params, x, y).compile().as_text())
    reduces = [line.strip() for line in hlo.text.splitlines() if " all-reduce(" in line or " all-reduce-start(" in line]
    operands = operand_sizes(reduces)  # the step's all-reduce: the gradients and the loss, as one tuple
    if not operands:
        raise RuntimeError("the compiled step holds no all-reduce: the batch is not sharded over the mesh")
    local = [np.asarray(leaf.addressable_data(0)) for leaf in jax.tree.leaves(params)]  # replicated: a full copy
    per = args.batch // nproc
    device = jax.local_devices()[0]  # the compute alone: the same step on one device and this process's rows
    alone = jax.tree.unflatten(jax.tree.structure(params), [jax.device_put(a, device) for a in local])
    xd, yd = (jax.device_put(a[me * per:(me + 1) * per], device) for a in (x_all, y_all))
    jax.block_until_ready(train_step(alone, xd, yd))  # compile for one device
    calls = {"step": timer(train_step, params, x, y), "compute": timer(train_step, alone, xd, yd),
             "one float": summed_rows(mesh, [1]), "one array": summed_rows(mesh, [sum(operands)]),
             "operands": summed_rows(mesh, operands)}
    in_turns = {name: (fn,) for name, fn in calls.items()}  # the calls in turns, the same order in every process
    times = worker.timed_rounds(None, in_turns, args.rounds, args.rounds * args.per_round, together=False,
                                warmup=False)["per_round"]
    worker.save("jax", **{f"p{i}": a for i, a in enumerate(local)})
    worker.emit(kind="jax", processes=nproc, local_devices=jax.local_device_count(), devices=jax.device_count(),
                device_ids=[d.id for d in jax.devices()], allreduces=reduces,
                allreduce_count=hlo.collectives()["all-reduce"], batch_sharding=str(x.sharding.spec),
                local_batch_rows=per, param_bytes=int(sum(a.nbytes for a in local)), allreduce_operands=operands,
                step_times=sum(times["step"], []), compute_times=sum(times["compute"], []),
                allreduce_alone={name: times[name] for name in ("one float", "one array", "operands")})
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
