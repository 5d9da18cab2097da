"""DSMEM: one CTA's shared tile into another CTA's shared memory in the cluster (``make_dsmem_copy``): bulk copies
to the peer's address from ``mapa``, completing on the peer's mbarrier."""
from .plan import DsmemPlan
from .planner import make_dsmem_copy
