"""Typed errors: every refusal in pycute is one of these, and each is a ``ValueError``."""


class PycuteError(ValueError):
    """Base class of pycute's errors."""


class LayoutError(PycuteError):
    """An operand lies outside a layout-algebra operation's domain."""


class DescriptorError(PycuteError):
    """A shared-memory matrix descriptor field is invalid (PTX ISA, tcgen05 shared memory descriptor)."""


class EmulationError(PycuteError):
    """The functional emulator met an operation the hardware would not accept."""


class PlanError(PycuteError):
    """make_tiled_copy refused a copy; the message names the rule, the values and the tensors."""


class CompileError(PycuteError):
    """NVRTC or ptxas rejected generated code, or the PTX-level interpreter met an unsupported instruction."""


class LaunchError(PycuteError):
    """A kernel launch refused its arguments or its setting: a tensor's device, dtype, shape, strides or alignment,
    a problem too large for the CPU path, or no torch / no GPU where the launch needs one."""
