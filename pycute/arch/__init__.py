"""Architecture models. ``pycute.arch.sm100``: Blackwell tcgen05 (descriptor, TMEM, emulator, CUDA emission)."""
