"""tools/attention_speed.py, the attention speed question: the configurations it times are valid ones (each fits
shared memory and the register budget: the constructor refuses the others) and different, FlashAttention-3's
protocol keeps 16k tokens and a hidden size of 2048, and its dry run builds what it launches."""
import pytest

from tools import attention_speed
from tools.__main__ import main


@pytest.mark.parametrize("quick", [True, False])
def test_the_protocol_keeps_16k_tokens_and_a_2048_hidden_size(quick):
    for head_dim, _, seqlens, _ in attention_speed.plan(quick):
        for s in seqlens:
            assert (attention_speed.TOKENS // s) * s == 16384
            assert (attention_speed.HIDDEN // head_dim) * head_dim == 2048


def test_the_variants_are_distinct_configurations_the_first_guess_first():
    from pycute.kernels.attention.config import AttentionConfig
    for head_dim in (64, 128, 256):
        vs = attention_speed.variants(head_dim, False)
        assert vs[0] == AttentionConfig.choose(head_dim) and len({v.name for v in vs}) == len(vs)


def test_the_dry_run_builds_the_first_guesses_without_local_memory_or_serialised_wgmma(tmp_path, capsys):
    # (the small problems it runs whole on the CPU are tests/kernels/attention's)
    out = tmp_path / "attention_speed.jsonl"
    assert main(["attention_speed", str(out), "--dry", "--only", "d64", "--first", "--no-cpu"]) == 0, \
        capsys.readouterr().out
    assert out.read_text().count('"kind": "build"') == 2
