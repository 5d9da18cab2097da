"""Hardware facts as data, filed by the generation that introduced them: ``sm80`` (Ampere: cp.async), ``sm90``
(Hopper: warps, and the homes of TMA, bulk copies, clusters and DSMEM), ``sm100`` (Blackwell: TMEM, the
shared-memory descriptor, swizzle modes, tcgen05.cp forms, tcgen05.ld/st shapes, the MMA). Each fact is written
once; generated C derives from it."""
