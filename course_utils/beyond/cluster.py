"""A real cluster, written out: the commands each machine runs (torchrun, ``jax.distributed``, ``TF_CONFIG``) and
what to check first when a multi-node job hangs. Text only: nothing here starts a process.
"""

from __future__ import annotations

from typing import Annotated

from course_utils import declare, display
from course_utils.beyond import multinode


@declare.checked
def cluster_commands(host: Annotated[str, declare.Matches(multinode.HOST, multinode.HOST_MEANING)] = "node0.example",
                     nnodes: Annotated[int, declare.Range(2, 4096)] = 2,
                     nproc_per_node: Annotated[int, declare.Range(1, 64)] = 8) -> str:
    """The commands for a real cluster of ``nnodes`` machines (text): torchrun, jax.distributed, TF_CONFIG."""
    if nnodes <= 4:  # the JSON written out; the shell splices in $NODE_INDEX between the single-quoted parts
        workers = ", ".join(f'"node{i}.example:12345"' for i in range(nnodes))
        tf_line = (f'export TF_CONFIG=\'{{"cluster": {{"worker": [{workers}]}}, "task": {{"type": "worker", '
                   f'"index": \'"$NODE_INDEX"\'}}}}\'')
    else:  # too many hosts to write out: let Python build the same JSON
        tf_line = ("export TF_CONFIG=\"$(python -c 'import json, os; print(json.dumps({\"cluster\": {\"worker\": "
                   f'[f\"node{{i}}.example:12345\" for i in range({nnodes})]}}, \"task\": {{\"type\": \"worker\", '
                   '\"index\": int(os.environ[\"NODE_INDEX\"])}}))\')\"')
    return "\n".join([
        f"export NODE_INDEX=0   # this machine's index, 0 to {nnodes - 1} (0 on {host}): set it on every machine",
        "",
        "# PyTorch: the SAME line on every machine (c10d elects the store host; ranks come from the rendezvous)",
        "export NCCL_SOCKET_IFNAME=eth0 GLOO_SOCKET_IFNAME=eth0   # the NIC that reaches the other nodes",
        f"torchrun --nnodes={nnodes} --nproc-per-node={nproc_per_node} --rdzv-backend=c10d \\",
        f"         --rdzv-endpoint={host}:29400 --rdzv-id=job42 --max-restarts=3 course_utils/workers/ddp_train.py",
        "",
        "# JAX: one process per machine (all its accelerators) or per GPU, before any other JAX call",
        f'jax.distributed.initialize(coordinator_address="{host}:1234", num_processes={nnodes},',
        '                           process_id=int(os.environ["NODE_INDEX"]))',
        f"#   or one process per GPU: num_processes={nnodes * nproc_per_node}, process_id = NODE_INDEX x "
        f"{nproc_per_node} + LOCAL_RANK, local_device_ids=[LOCAL_RANK]",
        "#   (on Cloud TPU pods and SLURM, jax.distributed.initialize() with no arguments finds all three itself)",
        "",
        "# TensorFlow: each machine sets its own TF_CONFIG (same cluster, its own index), then builds the strategy",
        tf_line,
        "strategy = tf.distribute.MultiWorkerMirroredStrategy()",
    ])


def hang_checklist() -> display.Table:
    """What to check first when a multi-node job hangs at start-up or mid-run, in order."""
    rows = (
        ("1", "Can every node reach the endpoint?", "nc -zv node0.example 29400 from each node; firewalls"),
        ("2", "Same --nnodes, --rdzv-id, endpoint, script, versions?", "a node with other flags waits forever"),
        ("3", "Right network interface?", "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME; NCCL_DEBUG=INFO shows the NIC"),
        ("4", "Which rank is missing?", "TORCH_DISTRIBUTED_DEBUG=DETAIL; py-spy dump --pid on the stuck rank"),
        ("5", "Mismatched collectives?", "a rank skipped or added an all-reduce (data-dependent branch, uneven data)"),
        ("6", "How long until a stuck collective fails?",
         "init_process_group(timeout=timedelta(minutes=5)); the default waits 10 min (NCCL) or 30 min (gloo). On "
         "timeout NCCL tears the process down already: TORCH_NCCL_ASYNC_ERROR_HANDLING defaults to 3 in torch 2.13 "
         "(torchrun sets 1 unless you set it), so leave it alone"),
        ("7", "What did each rank run last?",
         "set TORCH_NCCL_DUMP_ON_TIMEOUT=1: on a timeout every rank then dumps the flight recorder, its last "
         "collectives (kept by default: TORCH_FR_BUFFER_SIZE, 2000 entries in torch 2.13; file prefix: "
         "TORCH_FR_DUMP_TEMP_FILE); torchfrtrace <folder> names the rank and collective that diverged"),
    )
    return display.Table(("#", "check", "how"), rows, title="A multi-node job hangs: check in this order")
