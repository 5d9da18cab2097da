"""What every emitter shares: the C ABI version of the generated functions and headers, and the names a generated
function may take."""
from __future__ import annotations

import re

from ..errors import CompileError

__all__ = ["ABI_VERSION", "check_function_name"]

#: The C ABI of generated functions and of the headers (CHANGELOG.md); bumped when a name or signature changes.
ABI_VERSION = 1

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# C++ keywords, main, and CUDA's built-in variables: names a generated function must not take.
_RESERVED = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield
decltype default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
xor_eq main threadIdx blockIdx blockDim gridDim warpSize""".split())


def check_function_name(name: object) -> None:
    """A TypeError or CompileError unless ``name`` is a C identifier a generated function may take."""
    if not isinstance(name, str):
        raise TypeError(f"the generated function's name must be a string, got {name!r}")
    if not _NAME_RE.match(name) or name in _RESERVED or name.startswith("__") or re.match(r"_[A-Z]", name):
        raise CompileError(f"{name!r} is not a C identifier a function can have (a keyword, a CUDA built-in or a "
                           f"name reserved to the implementation)")
