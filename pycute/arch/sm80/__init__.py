"""Ampere (sm_80) facts every later generation keeps: ``cp.async`` (LDGSTS), the per-thread asynchronous global ->
shared copy (``cp_async``)."""
from .cp_async import CP_ASYNC_SIZES, CP_ASYNC_TARGETS, cp_async_ptx
