"""``python -m course_utils.migrate assess ...``: the migration decision on your own model (see ``assess``)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from course_utils import children
from course_utils.migrate import assessing as _assess
from course_utils.migrate import report, story


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m course_utils.migrate",
                                  description="Measure whether compiling your model pays, on your hardware.")
    commands = top.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("assess", help="eager against torch.compile in fresh processes, priced and decided "
                                             "('assess price report.json --config costs.toml' prices a saved "
                                             "report again)")
    cmd.add_argument("--model", required=True, help="PKG.MODULE:make_model, returns a torch.nn.Module")
    cmd.add_argument("--batches", required=True, help="PKG.MODULE:make_batches, returns (inputs, targets) batches")
    cmd.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="an argument of make_model (repeat for several), e.g. --model-arg dim=128")
    cmd.add_argument("--batches-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="an argument of make_batches (repeat for several), e.g. --batches-arg batch=32")
    cmd.add_argument("--loss", help="PKG.MODULE:loss_fn(outputs, targets) (default: cross-entropy)")
    cmd.add_argument("--config", help="costs TOML (default: the seed article's figures, each labelled)")
    cmd.add_argument("--processes", type=int, default=5, help="fresh processes, at least 2 (default 5)")
    cmd.add_argument("--steps", type=int, default=50, help="timed steps per variant per process (default 50)")
    cmd.add_argument("--device", default="auto", choices=_assess.DEVICES)
    cmd.add_argument("--modes", help="comma-separated: " + ",".join(_assess.MODES) + " (default: default, or none "
                                     "beside --compile)")
    cmd.add_argument("--compile", dest="compiler", metavar="PKG.MODULE:fn",
                     help="your compile function (takes the model, returns the compiled one): measured first, it "
                          "decides")
    cmd.add_argument("--fullgraph", action="store_true", help="torch.compile(..., fullgraph=True) for --modes")
    cmd.add_argument("--regional", action="store_true",
                     help="compile each block of the model's largest ModuleList instead of the whole model")
    cmd.add_argument("--inputs", default="end-to-end", choices=_assess.INPUTS,
                     help="end-to-end: each step draws from make_batches() as training does, data wait timed apart; "
                          "cached: batches fetched once, compute only")
    cmd.add_argument("--compile-optimizer", action="store_true",
                     help="the compiled variants' optimizer step compiled too: torch.compile(optimizer.step)")
    cmd.add_argument("--nproc-per-node", type=int, default=1,
                     help="ranks per fresh process: each is a torchrun job, eager DDP against compiled DDP (NCCL "
                          "with a GPU per rank, else gloo on the CPU, which stands in)")
    cmd.add_argument("--nnodes", type=int, default=1, help="nodes of the job: run this same command on each, with "
                                                           "its --node-rank; node 0 writes the report")
    cmd.add_argument("--node-rank", type=int, default=0, help="this node's rank, 0 to nnodes - 1")
    cmd.add_argument("--rdzv-endpoint", metavar="HOST:PORT",
                     help="with --nnodes 2 or more: where the nodes meet (torchrun's c10d rendezvous; node 0's "
                          "address)")
    cmd.add_argument("--separate", action="store_true",
                     help="after the first process, each variant in a process of its own (default: only when the "
                          f"variants together would take over {_assess.SEPARATE_SHARE * 100:.0f}%% of the memory)")
    cmd.add_argument("--amp", default="auto", choices=_assess.AMPS)
    cmd.add_argument("--threads", type=int, help="intra-op threads of the measuring processes (default: torch's)")
    cmd.add_argument("--timeout", type=float, help="seconds allowed per process (default: 300 + 8 per step)")
    cmd.add_argument("--out", required=True, help="folder for report.json, report.md, report.html")
    cmd.add_argument("--baseline", help="a saved report.json: exit 3 when the gain fell below its interval (the "
                                        "regression gate)")
    return top


GATE_FAILED = 3


def _args(name: str, pairs: list[str]) -> dict[str, int | float | str]:
    """KEY=VALUE pairs as keyword arguments: integers and numbers where they parse as such, else text."""
    out: dict[str, int | float | str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"{name} must be KEY=VALUE with KEY a Python name; got {pair!r}")
        for kind in (int, float):
            try:
                out[key] = kind(value)
                break
            except ValueError:
                out[key] = value
    return out


def _interrupt_once(signum: int, frame: object) -> None:
    """The first Ctrl-C stops the run; later ones are ignored, so they cut no cleanup short and the exit stays 130."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the command; exits 0 done, 1 a measuring process failed, 2 bad input, 3 the gate failed, 130 Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    previous = signal.signal(signal.SIGINT, _interrupt_once)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGINT, previous)


def price_parser() -> argparse.ArgumentParser:
    cmd = argparse.ArgumentParser(prog="python -m course_utils.migrate assess price",
                                  description="Price a saved report again at other inputs, without measuring.")
    cmd.add_argument("report", help="a report.json that assess wrote (rewritten: decision, inputs, money)")
    cmd.add_argument("--config", help="costs TOML (default: the seed article's figures, each labelled)")
    return cmd


def _price(argv: list[str]) -> int:
    args = price_parser().parse_args(argv)
    try:
        saved, pricing = report.reprice(args.report, args.config)
    except (TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.repriced(saved, pricing))
    print(f"report: {args.report} (decision, inputs and money rewritten; nothing was measured)")
    return 0


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["assess", "price"]:
        return _price(argv[2:])
    args = parser().parse_args(argv)
    try:
        given = {k: v for k, v in vars(args).items() if k not in ("command", "model_arg", "batches_arg")}
        found = _assess.assess(**given, model_args=_args("--model-arg", args.model_arg),
                               batches_args=_args("--batches-arg", args.batches_arg))
    except KeyboardInterrupt:
        print(f"interrupted: every measuring process was stopped; nothing was written to {args.out}", file=sys.stderr)
        return 130
    except (TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (children.ChildFailed, TimeoutError) as exc:
        print(f"error: {exc}\nno report was written to {args.out}", file=sys.stderr)
        return 1
    if found is None:
        print(f"node {args.node_rank} of {args.nnodes}: every measuring job ran; node 0 writes the report")
        return 0
    told = report.findings_of(found)
    print(told["decision"].sentence.replace("**", ""))
    for blocker in story.blockers(told["parity"], told["fallback"]):
        print(f"blocker: {blocker}")
    print(f"report: {args.out}/report.html (and report.md, report.json)")
    if found.gate is not None:
        print(found.gate.finding().sentence.replace("**", ""))
        return GATE_FAILED if found.gate.failed else 0
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except KeyboardInterrupt:  # a Ctrl-C before main's own handler was in place
        code = 130
    sys.exit(code)
