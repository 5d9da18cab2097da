"""Tensor maps edited on the device in a whole-kernel run (PTX ISA #tensormap-instructions-tensormap-replace,
#tensormap-instructions-tensormap-cp-fenceproxy, #parallel-synchronization-and-communication-instructions-membar
``fence.proxy.tensormap``).

A map in memory is the 128-byte image ``run_kernel`` placed (a marker and the index of its fields in the run's
table). ``tensormap.replace`` reads the image at its address (shared or global), applies the edit to the fields
(``sim.executors.tma.replace_field``: a value the driver's encoder would refuse is an error; a new global address
must lie in one of the run's buffers) and writes the image of the edited map back; plain loads and stores copy images
like any bytes (``pycute_tensormap_fetch``). ``tensormap.cp_fenceproxy`` (every lane of the warp, ``.sync.aligned``)
copies an image from shared to global memory and publishes it to the tensormap proxy; a TMA through a map some
thread published during the run must come after a ``fence.proxy.tensormap::generic.acquire`` of that address by the
issuing thread that is ordered (happens-before) after the publish -- by the warp itself, or a CTA barrier after
the publishing warp's ``cp_fenceproxy`` -- else the copy may use the stale map: an error naming the publish and
the missing barrier or acquire."""
from __future__ import annotations

import re

import attrs

from ..errors import EmulationError
from ..sim.executors.tma import TensorMap, replace_field
from .translate import RUNTIME_EMITTERS, Code, KernelCtx
from .front import Instr
from .memory import TENSOR_MAP_MAGIC
from .operands import address
from .rtemit_sync import KERNEL_EXECUTORS

__all__ = ["map_index", "check_acquired"]

_IMAGE = 128


def map_index(image: bytes, where: str) -> int:
    """The run's index of the map whose image is ``image``."""
    if not image.startswith(TENSOR_MAP_MAGIC):
        raise EmulationError(f"the tensor map at {where} is not one run_kernel placed (pass pycute.interp.tensor_map("
                             f"plan, array) as the argument, and copy or edit it with plain copies and "
                             f"tensormap.replace only; a map another warp publishes with tensormap.cp_fenceproxy is "
                             f"read here before that publish: a CTA barrier after it is missing)")
    return int.from_bytes(image[len(TENSOR_MAP_MAGIC):len(TENSOR_MAP_MAGIC) + 4], "little")


def _image(index: int) -> bytes:
    return TENSOR_MAP_MAGIC + index.to_bytes(4, "little") + bytes(_IMAGE - len(TENSOR_MAP_MAGIC) - 4)


def _replace(cta, th, rec, site, R: list) -> None:
    """``tensormap.replace``: the map at ``rec.map_address`` with one field changed."""
    world = cta.world
    space = "shared" if ".shared" in site.op else "generic"
    image = cta.ld(th, space, rec.map_address, _IMAGE).to_bytes(_IMAGE, "little")
    old = world.tensor_maps[map_index(image, f"{rec.map_address:#x} (tensormap.replace)")]
    if rec.field == "global_address":
        replace_field(TensorMap(old.params), rec.field, None, rec.value)        # the alignment rule
        buf, offset = world.gmem.find(rec.value, 1, "tensormap.replace global_address")
        new = attrs.evolve(old, array=buf.data, offset=offset)
    else:
        new = attrs.evolve(old, params=replace_field(TensorMap(old.params), rec.field, rec.ordinal, rec.value).params)
    world.tensor_maps[len(world.tensor_maps)] = new
    cta.st(th, space, rec.map_address, _IMAGE, int.from_bytes(_image(len(world.tensor_maps) - 1), "little"))


def _publish(cta, warp, site, group: dict) -> None:
    """``tensormap.cp_fenceproxy``: one 128-byte copy from shared to global memory, published to the proxy."""
    records = {g[2][0] for g in group.values()}
    if len(records) != 1:
        raise EmulationError(f"{site.text!r}: the lanes of warp {warp.index} give different operands {records}")
    rec = records.pop()
    if rec.size != _IMAGE:
        raise EmulationError(f"{site.text!r}: copies {rec.size} B; a tensor map is {_IMAGE} (PTX ISA)")
    th = group[min(group)][0]
    cta.st(th, "generic", rec.gmem, _IMAGE, cta.ld(th, "shared", rec.smem, _IMAGE))
    world = cta.world
    lanes = tuple((t.slot, int(t.vc[t.slot])) for t, *_ in group.values())     # each lane's clock at the publish
    world.map_publish[rec.gmem] = (lanes, repr(th), site.line)


def _acquire(th, addr: int, line: int) -> None:
    """``fence.proxy.tensormap::generic.acquire`` of the map at ``addr``: the thread's clock there."""
    th.map_acquired[addr] = (th.vc.copy(), line)


def check_acquired(world, th, addr: int) -> None:
    """A TMA through the map at ``addr``: if a thread published it during the run, ``th``'s acquire of it is
    ordered after the publish (happens-before: a CTA barrier between another warp's cp_fenceproxy and the acquire,
    PTX ISA #tensormap-instructions-tensormap-cp-fenceproxy); the error names what is missing."""
    if addr not in world.map_publish:
        return
    lanes, who, line = world.map_publish[addr]
    fence = th.map_acquired.get(addr)
    after = lambda vc: any(vc[slot] >= epoch for slot, epoch in lanes)           # noqa: E731
    if fence is not None and after(fence[0]):
        return
    buf, off = world.gmem.find(addr, _IMAGE, "tensor-map read")
    head = (f"{th!r} copies through the tensor map at {addr:#x} ({buf.name}+{off:#x}), which {who} published with "
            f"tensormap.cp_fenceproxy (PTX line {line}), ")
    tail = " (PTX ISA #tensormap-instructions-tensormap-cp-fenceproxy: the copy may use the old map)"
    if not after(th.vc):
        acq = (f"its fence.proxy.tensormap::generic.acquire (PTX line {fence[1]}) is not ordered after it" if fence
               else "it has no fence.proxy.tensormap::generic.acquire of it either")
        raise EmulationError(head + "but no synchronisation orders this thread after that publish: the CTA barrier "
                             "(bar.sync / __syncthreads()) between the publishing warp's cp_fenceproxy and this "
                             f"thread's acquire is missing; {acq}" + tail)
    if fence is not None:
        raise EmulationError(head + f"and its fence.proxy.tensormap::generic.acquire (PTX line {fence[1]}) comes "
                             "before the synchronisation that orders it after the publish: acquire after the "
                             "barrier" + tail)
    raise EmulationError(head + "without a fence.proxy.tensormap::generic.acquire of it since" + tail)


def _fence(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    if re.match(r"proxy\.tensormap::generic$", ".".join(mods[:2])) and "acquire" in mods:
        return Code((f"{ctx.helper(_acquire, 'acquire')}(th, {address(ctx, ins.args[0])}, {ins.line})",))
    return Code(("pass",))          # the other fences order what runs in order here (docs/interpreter.md)


RUNTIME_EMITTERS["fence"] = _fence
KERNEL_EXECUTORS.update({"tensormap.replace": (_replace, False), "tensormap.cp_fenceproxy": (_publish, True)})
