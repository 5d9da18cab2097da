"""Configurations chosen by measurement, checked without a GPU: the shape class, the record's key (kernel, device,
type, class, pycute's version), the records file written whole and read back, the tuned winner found for any
problem of its class and ``choose`` left as the first guess otherwise, the candidates (``choose``'s first guess,
its neighbours, the other tile shapes), and tuning refused without a GPU."""
import json

import pytest

import pycute as pc
from pycute.kernels.hopper_gemm import HopperGemm, choose
from pycute.kernels.hopper_gemm.tune import KERNEL, neighbours, ranked, tune, tuned
from pycute.kernels.tuner import TuningRecords, records, shape_class, tuning_enabled, tuning_key


@pytest.fixture
def records_file(tmp_path, monkeypatch):
    path = tmp_path / "tuning.json"
    monkeypatch.setenv("PYCUTE_TUNING_FILE", str(path))
    return path


def test_a_shape_class_rounds_each_extent_up_to_a_power_of_two():
    assert shape_class(1, 1000, 1024, 1025) == (1, 1024, 1024, 2048)


def test_the_key_names_the_kernel_device_type_class_and_version():
    assert tuning_key("hopper_gemm", "NVIDIA H200", "bf16", (1000, 1000, 8192)) == \
        f"hopper_gemm|NVIDIA H200|bf16|1024x1024x8192|{pc.__version__}"


def test_records_are_written_whole_and_read_back(tmp_path):
    path = tmp_path / "sub" / "tuning.json"
    r = TuningRecords.load(path)
    r.put("k", {"config": {"BN": 128}})
    assert json.loads(path.read_text()) == {"k": {"config": {"BN": 128}}}
    assert TuningRecords.load(path).get("k") == {"config": {"BN": 128}} and len(TuningRecords.load(path)) == 1
    assert not list(path.parent.glob(".tuning-*"))                      # no temporary file left


def test_a_broken_records_file_reads_as_no_records(tmp_path):
    path = tmp_path / "tuning.json"
    path.write_text("{not json")
    assert TuningRecords.load(path).get("k") is None


def test_the_tuned_winner_serves_every_problem_of_its_class(records_file):
    winner = HopperGemm(BN=128, m_blocks=2, mode="pingpong", stages=4)
    key = tuning_key(KERNEL, "NVIDIA H200", "bf16", (1000, 1000, 8192))
    records().put(key, {"config": {f: getattr(winner, f) for f in ("dtype", "BN", "m_blocks", "consumers", "mode",
                                                                  "stages", "cluster", "group")}})
    assert tuned(1000, 1000, 8192, "bf16", "NVIDIA H200") == winner
    assert tuned(900, 1020, 5000, "bf16", "NVIDIA H200") == winner            # the same class
    assert tuned(1000, 1000, 8192, "bf16", "NVIDIA H100 80GB HBM3") is None    # another device: choose decides
    assert tuned(1000, 1000, 8192, "e4m3", "NVIDIA H200") is None


def test_a_record_of_no_configuration_is_ignored(records_file):
    records().put(tuning_key(KERNEL, "dev", "bf16", (64, 64, 64)), {"config": {"BN": "wide"}})
    assert tuned(64, 64, 64, "bf16", "dev") is None


def test_the_candidates_are_the_first_guess_its_neighbours_then_the_other_tiles():
    got = ranked(1000, 1000, 8192, "bf16", 132)
    assert got[0] == choose(1000, 1000, 8192) and len(got) == len(set(got)) == 8
    assert all(g in got for g in neighbours(got[0])[:3])


def test_neighbours_change_one_thing():
    g = HopperGemm(BN=128)
    assert HopperGemm(BN=128, m_blocks=2, mode="pingpong") in neighbours(g)
    assert HopperGemm(BN=128, cluster=1) in neighbours(g) and HopperGemm(BN=128, group=16) in neighbours(g)


def test_tuning_is_only_when_asked(monkeypatch):
    monkeypatch.delenv("PYCUTE_TUNE", raising=False)
    assert not tuning_enabled()
    monkeypatch.setenv("PYCUTE_TUNE", "1")
    assert tuning_enabled()


def test_tuning_without_a_gpu_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(pc.LaunchError, match=r"tuning needs a CUDA GPU"):
        tune(512, 512, 512)
