"""The protocol every kernel users call follows (docs/kernels.md): a frozen **configuration** -> its **plans** ->
its CUDA **source** (the configuration's constants as a prologue of ``constexpr``s, the plans' generated functions,
then the kernel's body, real CUDA read from the ``.cuh`` beside its Python) -> the **compiled** kernel (NVRTC,
cached on disk) -> a **launch**: what the entry needs besides the grid and the arguments (``LaunchShape``), which
the launcher (``pycute.kernels.launcher``) reads once per configuration."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from ..compile.nvrtc import Compiled
from ..errors import PlanError

__all__ = ["LaunchShape", "Kernel", "make_launch_shape"]


@attrs.frozen
class LaunchShape:
    """The launch of one compiled configuration but its grid and arguments: the ``extern "C"`` entry, the threads
    of a CTA, its dynamic shared memory and the cluster (CTAs along x, y, z; given at launch, so the kernel needs
    no ``__cluster_dims__``)."""

    entry: str
    threads: int
    smem_bytes: int
    cluster: tuple[int, int, int] = (1, 1, 1)

    @property
    def cluster_size(self) -> int:
        x, y, z = self.cluster
        return x * y * z


def make_launch_shape(entry: str, threads: int, smem_bytes: int,
                      cluster: int | tuple[int, ...] = 1) -> LaunchShape:
    """A ``LaunchShape``, checked: whole warps, at most 1024 threads, a non-negative shared-memory size and a
    cluster of at most 16 CTAs (the non-portable limit, CUDA programming guide "Thread Block Clusters")."""
    dims = (cluster,) if isinstance(cluster, int) else tuple(cluster)
    dims = dims + (1,) * (3 - len(dims))
    if len(dims) != 3 or not all(isinstance(d, int) and d > 0 for d in dims):
        raise PlanError(f"make_launch_shape: the cluster is up to 3 positive extents, got {cluster!r}")
    if not (isinstance(threads, int) and 32 <= threads <= 1024 and threads % 32 == 0):
        raise PlanError(f"make_launch_shape: {threads!r} threads; a CTA is 1 to 32 whole warps")
    if not isinstance(smem_bytes, int) or smem_bytes < 0:
        raise PlanError(f"make_launch_shape: {smem_bytes!r} bytes of dynamic shared memory")
    if dims[0] * dims[1] * dims[2] > 16:
        raise PlanError(f"make_launch_shape: a cluster of {dims} is {dims[0] * dims[1] * dims[2]} CTAs; at most 16")
    return LaunchShape(entry, threads, smem_bytes, (dims[0], dims[1], dims[2]))


@runtime_checkable
class Kernel(Protocol):
    """A configuration of a kernel users call: a frozen, hashable record (the launcher caches the compiled kernel
    by it) whose ``plans`` the ``source`` is generated from, ``compile`` builds it (NVRTC's on-disk cache answers a
    configuration built before) and ``launch_shape`` says how to launch it."""

    @property
    def plans(self) -> object: ...

    def source(self) -> str: ...

    def compile(self) -> Compiled: ...

    @property
    def launch_shape(self) -> LaunchShape: ...
