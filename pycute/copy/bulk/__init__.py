"""Bulk copies (``cp.async.bulk``, no tensor map): a tile between a global array and shared memory as the fewest
16-byte-aligned contiguous runs (``make_bulk_copy``), loads completing on an mbarrier, stores in a bulk group."""
from .plan import BulkChunk, BulkPlan
from .planner import make_bulk_copy
