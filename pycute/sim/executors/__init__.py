"""One executor per instruction family, each a ``pycute.sim.machine.Machine`` with that family's instructions, and
each module's ``decode`` reading its family's compiled statements back into issue records (the PTX interpreter's
``ISSUE_DECODERS`` table routes opcodes to them)."""
from .tcgen05_cp import Tcgen05CpExecutor, expand_fp4, source_units
from .tcgen05_ldst import Tcgen05LdStExecutor
from .tma import TmaExecutor
from .tma_modes import TmaModesExecutor
from .cp_async import CpAsyncExecutor
from .bulk import BulkExecutor
from .mma import Tcgen05MmaExecutor
from .wgmma import WgmmaExecutor
from .smem_ldst import SmemLdStExecutor
from .bulk import mapa_value
from .tma import createpolicy_token

#: Instructions that write a register with a value only this model knows, by opcode: ``mapa`` (this model's
#: shared::cluster windows) and ``createpolicy`` (a token of the L2 policy the copies' decoders read back).
REGISTER_VALUES = {"mapa": mapa_value, "createpolicy": createpolicy_token}
