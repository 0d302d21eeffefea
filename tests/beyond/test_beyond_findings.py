"""06's findings as the notebook composes them: each template gets every fact it quotes from the helper that builds
them, and every outcome it can reach reads in paragraphs of at most 120 words with the notebook's check names."""

from __future__ import annotations

import pytest
from beyond_fakes import fake

from course_utils import findings as core
from course_utils import intervals
from course_utils.beyond import elastic, findings, predict, sharded
from course_utils.display import MAX_PARAGRAPH_WORDS
from course_utils.distributed.comms import AllReduceModel

NAME = "FSDP2's bytes per step over DDP's (counted calls x ring factors)"  # the notebook's longest check name
STRADDLE = intervals.Speedup("a", "b", 0.5, 0.4, 0.6, 4, intervals.ROUNDS)
CHECKS = {  # kind -> outcome -> a check reaching it
    "above": {core.HELD: core.above(NAME, 2.0, 1.0), core.BELOW: core.above(NAME, 0.5, 1.0),
              core.UNDECIDED: core.above(NAME, STRADDLE, 0.5)},
    "below": {core.HELD: core.below(NAME, 0.5, 1.0), core.ABOVE: core.below(NAME, 2.0, 1.0),
              core.UNDECIDED: core.below(NAME, STRADDLE, 0.5)},
    "within": {core.HELD: core.within(NAME, 1.0, 0.5, 2.0), core.ABOVE: core.within(NAME, 3.0, 0.5, 2.0),
               core.BELOW: core.within(NAME, 0.1, 0.5, 2.0), core.UNDECIDED: core.within(NAME, STRADDLE, 0.5, 2.0)},
    "equal": {core.HELD: core.equal(NAME, 0, 0), core.ABOVE: core.equal(NAME, 1, 0),
              core.BELOW: core.equal(NAME, -1, 0)},
    "true": {core.HELD: core.true(NAME, True), core.FAILED: core.true(NAME, False)},
}
CRASH = elastic.ElasticRun(12, 3, 8, 6, {0: list(range(8)), 1: list(range(6, 12))}, {}, 14.2, None,
                           {"startup 0": 2.1, "startup 1": 2.3, "training 0": 0.4, "training 1": 0.5, "outside": 8.9})
FACTS = {  # what each template's cell passes, built by the helpers where the notebook uses one
    findings.NODES: {"node0": "0", "node1": "1", "backend": "gloo", "wall": 12.3, "phases": 4.5, "startup": 3.2,
                     "outside": 7.8},
    findings.FAILURE: {},
    findings.JAX: {"device_ids": "0, 1, 100000, 100001", "devices": 4, "leaves": 4, "allreduces": 1, "operands": 5,
                   "gloo_ranks": 4},
    findings.TF: {"wall": 20.1, "import": 6.2, "joined": 9.3, "work": 3.1, "outside": 7.7},
    findings.MEMORY: sharded.facts(fake()),
    findings.ELASTIC: elastic.facts(CRASH),
    findings.RESHARD: {"tensors": 32, "shards": 2},
    findings.COST: {"source": "all-reduce cost model of this machine (2 ranks, 6 rounds, 2026-01-01T00:00:00): read "
                              "from this run's build/machine/", "beta": "1.23 GB/s", "alpha": 45.6, "low": 0.81,
                    "high": 1.42, "rests": "*wide* 16.20 ms; *zero1* 1.10 ms; *jax* 3.30 ms"},
    findings.TRAFFIC: {**predict.traffic_facts(AllReduceModel(1e9, 1e-4), fake()), "speed": str(STRADDLE)},
    findings.REDUCE_SCATTER: {"trace": "c10d::_reduce_scatter_base_ -> gloo:all_reduce"},
    findings.JAX_SHARD: {"temps": 1.7, "scatters": 0, "allreduces": 2},
}


def test_every_template_of_the_notebook_is_composed_here() -> None:
    declared = {t for t in vars(findings).values() if isinstance(t, core.Template)}
    assert declared == set(FACTS)


@pytest.mark.parametrize("template", list(FACTS), ids=lambda t: t.key)
def test_every_outcome_reads_in_short_paragraphs_with_the_facts_the_cell_builds(template: core.Template) -> None:
    assert set(template.facts) == set(FACTS[template]), "the cell passes exactly the facts the texts quote"
    for outcome in template.outcomes:
        if outcome == core.NOT_TESTED:
            finding = core.Finding(template, (), dict.fromkeys(template.facts, ""), why="JAX is not installed")
        else:
            kind = next(k for k in template.kinds if outcome in CHECKS[k])
            finding = core.Finding(template, (CHECKS[kind][outcome],) * 3, FACTS[template])
        assert finding.outcome == outcome
        prose = finding.prose()
        assert prose.longest_paragraph <= MAX_PARAGRAPH_WORDS, (template.key, outcome, prose.paragraphs)
        assert "{" not in prose.text and "<" not in prose.text, prose.text


def test_memory_facts_quote_each_rank_and_say_when_the_gathers_were_not_measured() -> None:
    facts = sharded.facts(fake(uneven=True))
    assert facts["buckets"] == "3.91 KiB" and facts["zero1"] == "11.7 KiB, 11.7 KiB"
    assert facts["fsdp2"] == "7.81 KiB, 5.86 KiB"
    assert "not measured here" in facts["peak"]


def test_elastic_and_traffic_facts() -> None:
    assert elastic.facts(CRASH) == {"crash_at": 8, "resumed": 6, "seconds": 14.2, "startup0": 2.1, "startup1": 2.3,
                                    "outside": 8.9, "training": pytest.approx(0.9)}
    traffic = predict.traffic_facts(AllReduceModel(1e9, 1e-4), fake())
    assert (traffic["gathers"], traffic["scatters"], traffic["allreduces"], traffic["calls"]) == (4, 2, 1, 6)
    assert traffic["ddp_ms"] == pytest.approx(0.2) and traffic["gloo"] == pytest.approx(1.5)
