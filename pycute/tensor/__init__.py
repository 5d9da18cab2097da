"""Tensors by memory space: global memory (``make_global_tensor``), shared memory (``make_smem_tensor``, the
canonical K-major tiles), tensor memory (``make_tmem_tensor``, placed by ``TmemAllocation``) and register fragments
(``make_fragment``; each value's (row, col): ``fragment_coords``). Each has a ``space``, which is what
``copy_async`` dispatches on, and run-time coordinates (``dynamic``)."""
from .region import Dynamic, DynamicIndex, MemorySpace, Region, dynamic
from .gmem import GlobalTensor, global_tensor_from, make_global_tensor
from .smem import SmemTensor, make_smem_tensor
from .tmem import TmemPlacement, TmemTensor, make_tmem_tensor
from .rmem import RegisterFragment, make_fragment
from .coords import FragmentCoords, fragment_coords
from .alloc import TmemAllocation
from .canonical import kmajor_smem_buffer, kmajor_smem_tensor, mnmajor_smem_tensor
from .values import layout_values, smem_bytes_needed, smem_element_offsets
from .stages import make_stages
