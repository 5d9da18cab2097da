"""An attention configuration: the first guess per head dimension, and every configuration the kernel cannot be
built for refused naming the rule and the values."""
import pytest

from pycute.errors import PlanError
from pycute.kernels.attention.config import AttentionConfig


@pytest.mark.parametrize("head_dim, causal, tile", [(64, False, (192, 128)), (64, True, (192, 128)),
                                                    (128, False, (128, 128)), (256, True, (128, 80))])
def test_the_first_guess_is_flashattention3s_tile_within_the_shared_memory(head_dim, causal, tile):
    c = AttentionConfig.choose(head_dim, causal)
    assert (c.block_m, c.block_n) == tile and c.smem_bytes <= 232448
    assert c.threads == 128 * (1 + c.consumers)


def test_the_consumers_take_the_register_file_the_producer_gives_back():
    # 24 registers for the producer warpgroup, the rest of 64K shared by the consumers (one CTA per SM)
    assert AttentionConfig.choose(128).consumer_registers == 240
    assert AttentionConfig.choose(64).consumer_registers == 160


@pytest.mark.parametrize("kwargs, message", [
    (dict(head_dim=96), r"head dim 96: the kernel is built for head dims \[64, 128, 256\]"),
    (dict(block_n=100), r"block_n=100: .* a multiple of 16 up to 256"),
    (dict(block_n=264), r"block_n=264"),
    (dict(consumers=4), r"consumers=4: 1 to 3 consumer warpgroups"),
    (dict(kv_stages=1), r"kv_stages=1: at least one Q stage and two K and V stages"),
    (dict(head_dim=256, block_n=128, q_stages=1), r"1 Q stage\(s\) x 65536 B \+ 2 x 2 K/V stages x 65536 B \+ 1024 B "
                                                  r"of alignment = 328704 B, over sm_90a's 232448 B"),
    (dict(dtype="e4m3"), r"dtype 'e4m3': the kernel takes bf16 or f16")])
def test_a_configuration_the_kernel_cannot_be_built_for_is_refused_naming_the_rule(kwargs, message):
    with pytest.raises(PlanError, match=message):
        AttentionConfig(**kwargs)


def test_a_head_dimension_without_a_guess_is_refused():
    with pytest.raises(PlanError, match=r"head dim 80"):
        AttentionConfig.choose(80)
