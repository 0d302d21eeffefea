"""TensorFlow ``MultiWorkerMirroredStrategy`` from ``TF_CONFIG`` (``cu.beyond.tfmulti.run``), a custom loop (Keras 3's
multi-worker ``fit`` is reported broken: keras-team/keras#20585); worker 0 then trains alone, as the reference."""

import argparse
import os
import time

import psutil

from course_utils import data, env, models
from course_utils.beyond.tfmulti import tf_config
from course_utils.distributed import worker


def join_cluster(tf, hosts: list[str], index: int):
    """Describe the cluster and this worker's place in it, then join: blocks until every worker is up."""
    os.environ["TF_CONFIG"] = tf_config(hosts, index)  # '{"cluster": {"worker": hosts}, "task": {"type": ...'
    return tf.distribute.MultiWorkerMirroredStrategy()  # collective all-reduce across the workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ports", required=True, help="comma-separated: one free port per worker")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all workers together)")
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    ports = [int(p) for p in args.ports.split(",")]
    index = worker.rank()
    if len(ports) != worker.world_size():
        raise ValueError(f"--ports must list {worker.world_size()} ports, one per worker; got {args.ports!r}")
    before_import = time.time()
    tf = env.import_tensorflow()  # import tensorflow, without its start-up banner
    imported = time.time()

    tf.get_logger().setLevel("ERROR")
    strategy = join_cluster(tf, [f"127.0.0.1:{p}" for p in ports], index)  # on a cluster: real host names
    joined = time.time()
    worker.progress(0, args.steps, f"{strategy.num_replicas_in_sync} replicas in sync over {len(ports)} workers")
    x, y = data.classification(args.steps * args.batch, seed=5)

    def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
        per = ctx.get_per_replica_batch_size(args.batch)
        lo = ctx.input_pipeline_id * per  # this worker's rows of every global batch
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(args.batch).map(
            lambda a, b: (a[lo:lo + per], b[lo:lo + per]))

    def make_step(model, optimizer, run):
        @tf.function
        def step(batch):
            def replica_step(a, b):
                with tf.GradientTape() as tape:
                    nll = tf.keras.losses.sparse_categorical_crossentropy(b, model(a, training=True), from_logits=True)
                    loss = tf.reduce_sum(nll) / args.batch  # divide by the GLOBAL batch: the all-reduce sums
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss
            return run(replica_step, batch)
        return step

    with strategy.scope():
        model = models.keras_mlp()
        optimizer = tf.keras.optimizers.SGD(args.lr)
    step = make_step(model, optimizer, lambda fn, b: strategy.run(fn, args=b))
    times = []
    for s, batch in enumerate(strategy.distribute_datasets_from_function(dataset_fn)):
        start = time.perf_counter()
        step(batch)
        times.append(time.perf_counter() - start)
        worker.progress(s + 1, args.steps)
    weights = [v.numpy() for v in model.trainable_variables]
    worker.save("multiworker", **{f"w{i}": w for i, w in enumerate(weights)})
    worker.emit(kind="multiworker", replicas=strategy.num_replicas_in_sync, step_times=times[1:],
                tf_config=os.environ["TF_CONFIG"])
    if index == 0:  # the reference: one worker, no strategy, whole batches
        plain, plain_opt = models.keras_mlp(), tf.keras.optimizers.SGD(args.lr)
        plain_step = make_step(plain, plain_opt, lambda fn, b: fn(*b))
        for batch in tf.data.Dataset.from_tensor_slices((x, y)).batch(args.batch):
            plain_step(batch)
        worker.save("one_worker", **{f"w{i}": v.numpy() for i, v in enumerate(plain.trainable_variables)})
    worker.emit(kind="timeline", import_seconds=imported - before_import,  # where this worker's time went
                joined_seconds=joined - psutil.Process().create_time(), work_seconds=time.time() - joined)


if __name__ == "__main__":
    main()
