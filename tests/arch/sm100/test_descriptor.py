import pytest
from hypothesis import given, strategies as st

from pycute import DescriptorError
from pycute.arch.sm100 import SmemDescriptor, SwizzleMode, patch_start_address


@pytest.mark.parametrize("desc,value", [
    # K-major 128B-swizzled fp32 128x32 tile: LBO field 1 (16 B), SBO 1024 B, version bit 46, swizzle code 2.
    (SmemDescriptor(lbo=16, sbo=1024, swizzle=SwizzleMode.B128), 0x4000404000010000),
    (SmemDescriptor(lbo=16, sbo=256, swizzle=SwizzleMode.B32), 0xC000401000010000),
    (SmemDescriptor(lbo=2048, sbo=128), 0x0000400800800000),
    # Worked examples A-C of the spec note (section 6.4).
    (SmemDescriptor(start_address=0x400, sbo=128), 0x0000400800000040),
    (SmemDescriptor(start_address=0x800, lbo=16, sbo=256, swizzle=SwizzleMode.B32), 0xC000401000010080),
    (SmemDescriptor(start_address=0x1010, lbo=16, sbo=1024, swizzle=SwizzleMode.B128), 0x4000404000010101),
])
def test_known_encodings(desc, value):
    assert desc.encode() == value
    assert SmemDescriptor.decode(value) == desc


def test_encode_with_an_explicit_start_address():
    d = SmemDescriptor(lbo=16, sbo=1024, swizzle=SwizzleMode.B128)
    assert d.encode(0x1010) == 0x4000404000010101


@given(st.integers(0, 0x3FFF), st.integers(0, 0x3FFF), st.integers(0, 0x3FFF),
       st.sampled_from(list(SwizzleMode)), st.integers(0, 7), st.integers(0, 1))
def test_encode_decode_round_trip(start, lbo, sbo, swizzle, base_offset, lbo_mode):
    d = SmemDescriptor(start << 4, lbo << 4, sbo << 4, swizzle, base_offset, lbo_mode)
    assert SmemDescriptor.decode(d.encode()) == d


@pytest.mark.parametrize("code", [3, 5, 7])
def test_decode_rejects_invalid_swizzle_codes(code):
    with pytest.raises(DescriptorError, match=f"swizzle code {code} is invalid"):
        SmemDescriptor.decode(1 << 46 | code << 61)


def test_decode_rejects_wrong_fixed_field():
    with pytest.raises(DescriptorError, match="bits 46-48 are 0b000, must be 0b001"):
        SmemDescriptor.decode(0x0000000800800000)
    with pytest.raises(DescriptorError, match="bits 53-60 must be 0"):
        SmemDescriptor.decode(1 << 46 | 1 << 55)


def test_decode_rejects_reserved_bits():
    with pytest.raises(DescriptorError, match="reserved bits"):
        SmemDescriptor.decode(1 << 46 | 1 << 14)


@pytest.mark.parametrize("field,value,message", [("lbo", 24, "not 16-byte aligned"),
                                                 ("sbo", 1 << 18, "outside"),
                                                 ("start_address", -16, "outside")])
def test_fields_must_be_aligned_and_in_range(field, value, message):
    with pytest.raises(DescriptorError, match=f"{field} .*{message}"):
        SmemDescriptor(**{field: value})


def test_patch_replaces_only_the_14_bit_start_field():
    d = SmemDescriptor(lbo=16, sbo=1024, swizzle=SwizzleMode.B128).encode()
    patched = patch_start_address(d, 0x1_2340)
    assert patched == d | (0x1_2340 >> 4)
    assert patch_start_address(patched, 0x400) == d | 0x40


def test_swizzle_mode_geometry():
    assert [m.code for m in SwizzleMode] == [0, 6, 4, 2, 1]
    assert [SwizzleMode.from_row_pitch(p) for p in (16, 32, 64, 128)] == [
        SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128]
    assert SwizzleMode.B128.period == 1024 and SwizzleMode.B32.period == 256
    with pytest.raises(DescriptorError, match="no swizzle mode has a 48-byte row pitch"):
        SwizzleMode.from_row_pitch(48)


def test_descriptor_repr_lists_fields():
    r = repr(SmemDescriptor(lbo=16, sbo=1024, swizzle=SwizzleMode.B128))
    assert "lbo=16" in r and "sbo=1024" in r and "SwizzleMode.B128" in r
