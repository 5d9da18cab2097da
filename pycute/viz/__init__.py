"""Pictures: text grids in CuTe's ``print_layout`` format, and SVG drawings of layouts, shared-memory tensors and
plans. Importing this layer registers the pictures as the ``"svg"`` view of layouts, tensors and plans, so that
Jupyter displays them (``_repr_svg_``) and ``plan.draw()`` works."""
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..tensor.smem import SmemTensor
from ..tensor.tmem import TmemTensor
from ..layout import ComposedBase, Layout
from ..views import provides
from .draw import draw_layout, draw_smem
from .plan import draw_plan
from .svg import Svg
from .text import layout_grid, print_layout

__all__ = ["print_layout", "layout_grid", "draw_layout", "draw_smem", "draw_plan", "Svg"]

provides("svg", Layout)(draw_layout)
provides("svg", ComposedBase)(draw_layout)
provides("svg", SmemTensor)(draw_smem)
provides("svg", TmemTensor)(lambda t: draw_layout(t.layout, title=repr(t)))
provides("svg", Tcgen05CpPlan)(draw_plan)
