"""assess's FLOP count (MFU's numerator) includes attention on a CPU: torch's counter knows only the GPU's kernels."""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from course_utils.migrate.examples import cpu_attention_flops


def test_cpu_attention_counts_its_two_matmuls_forward_and_five_backward() -> None:
    b, h, s, d = 2, 4, 16, 8
    q = torch.randn(b, h, s, d, requires_grad=True)
    with FlopCounterMode(display=False) as bare:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    with FlopCounterMode(display=False, custom_mapping=cpu_attention_flops()) as counted:
        torch.nn.functional.scaled_dot_product_attention(q, q, q).sum().backward()
    forward = 2 * (2 * b * h * s * s * d)  # scores q k^T and the weighted sum of v
    assert bare.get_total_flops() == 0  # what assess printed before: the CPU kernel counted nothing
    assert counted.get_total_flops() == forward + 5 * forward // 2
