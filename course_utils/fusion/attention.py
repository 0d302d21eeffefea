"""Attention as a fusion problem: the bytes of one score matrix, and the bytes a blocked kernel (FlexAttention)
moves instead, computed from the shapes and the block mask; the notebook writes the attention itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from course_utils import declare, display
from course_utils.declare import PositiveInt, Range


@declare.checked
@dataclass(frozen=True, repr=False)
class AttentionBytes:
    """Bytes of one attention call: ``scores`` is one B x H x L x S score matrix; ``ideal`` reads q, k, v once and
    writes the output once; ``blocked`` is what a blocked kernel reads when every query block re-reads the key and
    value blocks it visits (``visited`` of ``blocks`` block pairs, from the block mask)."""

    scores: PositiveInt
    ideal: PositiveInt
    blocked: PositiveInt
    visited: Annotated[int, Range(0)]
    blocks: PositiveInt

    def __post_init__(self) -> None:
        if self.visited > self.blocks:
            raise ValueError(f"visited must be at most blocks ({self.blocks}); got {self.visited}")

    @property
    def visited_share(self) -> float:
        """Share of the (query block, key block) pairs the kernel computes; the rest the mask skips."""
        return self.visited / self.blocks

    def table(self) -> display.Table:
        rows = [("one score matrix (B x H x L x S, fp32)", display.format_bytes(self.scores)),
                ("fused, ideal: q, k, v read once, output written once", display.format_bytes(self.ideal)),
                (f"fused, blocked: k and v re-read for each of {self.visited} visited block pairs",
                 display.format_bytes(self.blocked)),
                ("block pairs the mask lets the kernel skip", display.percent(1 - self.visited_share))]
        return display.table(["attention bytes (computed)", "bytes"], rows)

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _shape(name: str, tensor: Any) -> tuple[int, ...]:
    shape = getattr(tensor, "shape", None)
    if shape is None or len(shape) != 4:
        raise TypeError(f"{name} must be a 4-d tensor (batch, heads, length, dim); got {type(tensor).__name__} "
                        f"with shape {shape}")
    return tuple(int(s) for s in shape)


@declare.checked
def attention_bytes(q: Any, k: Any, v: Any, block_mask: Any = None) -> AttentionBytes:
    """The bytes of ``attention(q, k, v)`` for tensors shaped (batch, heads, length, dim), fp32 counted as 4 bytes
    per element, and, given FlexAttention's ``block_mask``, what a blocked kernel reads (see ``AttentionBytes``)."""
    (b, h, length, e), (kb, kh, s, ke), (vb, vh, vs, ev) = _shape("q", q), _shape("k", k), _shape("v", v)
    if (kb, kh, ke) != (b, h, e) or (vb, vh, vs) != (b, h, s):
        raise ValueError(f"q, k, v must agree in batch, heads, length of k and v, and dim of q and k; got "
                         f"q {(b, h, length, e)}, k {(kb, kh, s, ke)}, v {(vb, vh, vs, ev)}")
    fp32 = 4
    scores = b * h * length * s * fp32
    q_bytes, k_bytes, v_bytes, out = (b * h * length * e * fp32, b * h * s * e * fp32, b * h * s * ev * fp32,
                                      b * h * length * ev * fp32)
    ideal = q_bytes + k_bytes + v_bytes + out
    if block_mask is None:
        return AttentionBytes(scores, ideal, ideal, 1, 1)
    sizes = getattr(block_mask, "BLOCK_SIZE", None)
    partial = getattr(block_mask, "kv_num_blocks", None)
    if sizes is None or partial is None:
        raise TypeError(f"block_mask must be a FlexAttention BlockMask (create_block_mask); got "
                        f"{type(block_mask).__name__}")
    full = getattr(block_mask, "full_kv_num_blocks", None)
    q_block, kv_block = (int(n) for n in sizes)
    per_mask = int(partial.sum()) + (0 if full is None else int(full.sum()))
    mask_b, mask_h = int(partial.shape[0]), int(partial.shape[1])
    visited = per_mask * (b // mask_b) * (h // mask_h)  # a mask made with B=None, H=None serves every batch, head
    blocks = b * h * -(-length // q_block) * -(-s // kv_block)
    tile = kv_block * (e + ev) * fp32  # one key block and one value block
    blocked = q_bytes + out + visited * tile
    return AttentionBytes(scores, ideal, blocked, visited, blocks)
