import multiprocessing

import pytest

import pycute as pc
from pycute.compile import CompileCache, compile_cuda
from pycute.compile.nvrtc import cache_key
from pycute.codegen.probe import probe_source
from tests.codegen.test_emit import demo_plan

SMOKE = probe_source(demo_plan(), "smoke")


@pytest.fixture
def cache(tmp_path):
    return CompileCache(tmp_path / "cache")


@pytest.mark.parametrize("arch", ["sm_100a", "sm_100f", "sm_103a", "sm_110a"])
def test_compiles_a_cubin_and_keeps_the_ptx(arch, cache):
    c = compile_cuda(SMOKE, arch=arch, cache=cache)
    assert c.cubin[:4] == b"\x7fELF" and f".target {arch}" in c.ptx
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4" in c.ptx


def test_unsupported_arch_is_refused():
    with pytest.raises(pc.CompileError, match="unsupported arch 'sm_120a'"):
        compile_cuda(SMOKE, arch="sm_120a", cache=False)


def test_ptxas_rejects_an_illegal_form_and_the_error_shows_the_ptx_line():
    bad = SMOKE.replace("32x128b.warpx4 [%0]", "128x256b.warpx4 [%0]")
    with pytest.raises(pc.CompileError) as info:
        compile_cuda(bad, cache=False)
    msg = str(info.value)
    assert "Modifier .warptype not allowed for instruction tcgen05.cp with shape '.128x256b'" in msg
    assert "PTX line" in msg and "tcgen05.cp.cta_group::1.128x256b.warpx4" in msg


def test_a_c_error_shows_the_offending_generated_lines():
    bad = SMOKE.replace("const unsigned long long desc =", "const unsigned long long desc = undeclared_name +")
    with pytest.raises(pc.CompileError) as info:
        compile_cuda(bad, cache=False)
    msg = str(info.value)
    assert 'identifier "undeclared_name" is undefined' in msg
    assert "> " in msg and "undeclared_name +" in msg.split("offending lines:")[1]


def test_cache_hit_returns_the_same_cubin(cache):
    first = compile_cuda(SMOKE, cache=cache)
    second = compile_cuda(SMOKE, cache=cache)
    assert not first.from_cache and second.from_cache and second == first


def test_cache_key_covers_source_options_arch_and_nvrtc_version():
    k = cache_key(SMOKE, "sm_100a", ("-std=c++17",))
    assert k != cache_key(SMOKE + " ", "sm_100a", ("-std=c++17",))
    assert k != cache_key(SMOKE, "sm_100f", ("-std=c++17",))
    assert k != cache_key(SMOKE, "sm_100a", ("-std=c++17", "-DX"))


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_damaged_cache_entry_is_detected_and_rebuilt(cache, damage):
    c = compile_cuda(SMOKE, cache=cache)
    path = cache.path(cache_key(SMOKE, "sm_100a", c.options))
    blob = path.read_bytes()
    path.write_bytes({"truncate": blob[: len(blob) // 2], "flip": blob[:-1] + bytes([blob[-1] ^ 1]),
                      "garbage": b"not a cache entry"}[damage])
    again = compile_cuda(SMOKE, cache=cache)
    assert not again.from_cache and again.cubin == c.cubin
    assert compile_cuda(SMOKE, cache=cache).from_cache


OTHER = SMOKE.replace("smoke", "other")


def test_an_entry_copied_over_another_key_is_never_returned(cache):
    mine, other = compile_cuda(SMOKE, cache=cache), compile_cuda(OTHER, cache=cache)
    mine_path = cache.path(cache_key(SMOKE, "sm_100a", mine.options))
    mine_path.write_bytes(cache.path(cache_key(OTHER, "sm_100a", other.options)).read_bytes())
    again = compile_cuda(SMOKE, cache=cache)
    assert not again.from_cache and again.cubin == mine.cubin and again.ptx == mine.ptx
    assert compile_cuda(SMOKE, cache=cache).from_cache


def test_a_pickled_or_foreign_entry_is_never_loaded(cache):
    import pickle
    c = compile_cuda(SMOKE, cache=cache)
    path = cache.path(cache_key(SMOKE, "sm_100a", c.options))
    for foreign in (pickle.dumps((b"\x7fELF", "ptx", "log")), b'{"format": "pycute-cache", "version": 1}\n',
                    path.read_bytes().replace(b'"version": 2', b'"version": 3')):
        path.write_bytes(foreign)
        again = compile_cuda(SMOKE, cache=cache)
        assert not again.from_cache and again.cubin == c.cubin


def test_an_intact_entry_whose_sections_are_not_a_cubin_is_rebuilt(cache):
    c = compile_cuda(SMOKE, cache=cache)
    key = cache_key(SMOKE, "sm_100a", c.options)
    cache.put(key, {"cubin": b"not an ELF", "ptx": b"", "log": b""})
    assert cache.get(key) is not None                     # intact as a cache entry...
    again = compile_cuda(SMOKE, cache=cache)
    assert not again.from_cache and again.cubin == c.cubin  # ...but not a cubin: compiled again


def test_cache_keys_and_sections_are_checked(cache):
    with pytest.raises(ValueError, match="64 lowercase hex digits"):
        cache.get("../../etc/passwd")
    with pytest.raises(TypeError, match="map names to bytes"):
        cache.put("0" * 64, {"cubin": "text"})


def test_cache_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PYCUTE_CACHE_DIR", str(tmp_path / "env-cache"))
    compile_cuda(SMOKE)
    assert any((tmp_path / "env-cache").rglob("*.bin"))


def _compile_in_child(directory):
    from pycute.compile import CompileCache, compile_cuda
    return compile_cuda(SMOKE, cache=CompileCache(directory)).cubin


def test_concurrent_processes_share_the_cache_safely(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        cubins = pool.map(_compile_in_child, [str(tmp_path / "shared")] * 4)
    assert len(set(cubins)) == 1
    entries = list((tmp_path / "shared").rglob("*.bin"))
    assert len(entries) == 1 and not any(p.name.startswith(".tmp-") for p in (tmp_path / "shared").rglob("*"))
    assert compile_cuda(SMOKE, cache=CompileCache(tmp_path / "shared")).from_cache


def test_unwritable_cache_does_not_break_compiles(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("a regular file cannot hold a cache folder, even for root")
    cache = CompileCache(blocker / "cache")
    first = compile_cuda(SMOKE, cache=cache)
    again = compile_cuda(SMOKE, cache=cache)
    assert first.cubin == again.cubin and not again.from_cache
