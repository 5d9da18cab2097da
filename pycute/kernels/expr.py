"""Elementwise epilogue expressions written in Python: a small tracer. A function of the accumulator value (``acc``:
``scale * (A B^T)[row, col]`` in f32) and of named inputs -- per-row vectors (``Row``), per-column vectors
(``Col``), a residual tensor (``Residual``), scalars (``float``) -- is called once on symbolic values; the operators
and functions it applies build an expression (``Expr``), which becomes straight-line CUDA (``c_expression``), a
float64 reference (``evaluate``) and a canonical text (``Expr.text``, parsed back by ``parse``) that names it in a
torch op's schema. What it cannot express -- Python control flow on a traced value, ``math`` functions, operators
with no elementwise meaning -- is refused with a ``PlanError`` naming what to write instead."""
from __future__ import annotations

import inspect
import math
import re
from typing import Any, Callable, Literal

import attrs
import numpy as np

from ..errors import PlanError

__all__ = ["Expr", "Value", "Row", "Col", "Residual", "Kind", "trace", "parse", "c_expression", "evaluate",
           "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "where",
           "minimum", "maximum", "clamp", "FUNCTIONS"]

Kind = Literal["row", "col", "residual", "scalar"]
#: The operations an expression holds, with their arity.
UNARY = ("neg", "abs", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt")
BINARY = ("add", "sub", "mul", "div", "min", "max", "gt", "ge", "lt", "le")
FUNCTIONS = UNARY + BINARY + ("where",)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Row:
    """An input annotation: a vector of M values, one per row of D (``bias_m: Row``)."""


class Col:
    """An input annotation: a vector of N values, one per column of D (``bias: Col``)."""


class Residual:
    """An input annotation: an M x N tensor added elementwise (``r: Residual``)."""


_KINDS: dict[Any, Kind] = {Row: "row", Col: "col", Residual: "residual", float: "scalar"}


@attrs.frozen(cache_hash=True)
class Expr:
    """One node: ``op`` ("acc", "input", "const" or an operation of ``FUNCTIONS``), its operands, and for an input
    its ``name`` and ``kind``, for a constant its ``value``."""

    op: str
    args: tuple["Expr", ...] = ()
    name: str = ""
    kind: str = ""
    value: float = 0.0

    @property
    def text(self) -> str:
        """The canonical text: ``acc``, ``(col bias)``, a float, or ``(op arg ...)``."""
        if self.op == "acc":
            return "acc"
        if self.op == "input":
            return f"({self.kind} {self.name})"
        if self.op == "const":
            return repr(float(self.value))
        return "(" + " ".join([self.op, *(a.text for a in self.args)]) + ")"

    def nodes(self) -> list["Expr"]:
        """Every distinct node, operands before their users."""
        out: list[Expr] = []
        seen: set[Expr] = set()

        def visit(e: Expr) -> None:
            if e not in seen:
                for a in e.args:
                    visit(a)
                seen.add(e)
                out.append(e)
        visit(self)
        return out

    def inputs(self) -> tuple[tuple[str, Kind], ...]:
        """The named inputs ``(name, kind)`` in the order they first appear."""
        found: dict[str, Kind] = {}
        for e in self.nodes():
            if e.op == "input" and found.setdefault(e.name, e.kind) != e.kind:      # type: ignore[arg-type]
                raise PlanError(f"epilogue: input {e.name!r} is used as both {found[e.name]} and {e.kind}")
        return tuple(found.items())


def _refuse(what: str) -> PlanError:
    return PlanError(f"epilogue: {what}; an epilogue is one elementwise expression of acc and its inputs")


class Value:
    """A traced value: arithmetic on it records the expression."""

    __slots__ = ("expr",)

    def __init__(self, expr: Expr):
        self.expr = expr

    def __add__(self, o: Any) -> "Value":
        return _apply("add", self, o)

    def __radd__(self, o: Any) -> "Value":
        return _apply("add", o, self)

    def __sub__(self, o: Any) -> "Value":
        return _apply("sub", self, o)

    def __rsub__(self, o: Any) -> "Value":
        return _apply("sub", o, self)

    def __mul__(self, o: Any) -> "Value":
        return _apply("mul", self, o)

    def __rmul__(self, o: Any) -> "Value":
        return _apply("mul", o, self)

    def __truediv__(self, o: Any) -> "Value":
        return _apply("div", self, o)

    def __rtruediv__(self, o: Any) -> "Value":
        return _apply("div", o, self)

    def __neg__(self) -> "Value":
        return _apply("neg", self)

    def __pos__(self) -> "Value":
        return self

    def __abs__(self) -> "Value":
        return _apply("abs", self)

    def __pow__(self, o: Any) -> "Value":
        if isinstance(o, (int, float)) and not isinstance(o, bool) and o in (1, 2, 3):
            out = self
            for _ in range(int(o) - 1):
                out = out * self
            return out
        if isinstance(o, (int, float)) and o == 0.5:
            return _apply("sqrt", self)
        raise _refuse(f"x ** {o!r}: only the constant powers 1, 2, 3 and 0.5 (sqrt) are traced")

    def __gt__(self, o: Any) -> "Value":
        return _apply("gt", self, o)

    def __ge__(self, o: Any) -> "Value":
        return _apply("ge", self, o)

    def __lt__(self, o: Any) -> "Value":
        return _apply("lt", self, o)

    def __le__(self, o: Any) -> "Value":
        return _apply("le", self, o)

    def __bool__(self) -> bool:
        raise _refuse("Python control flow on a traced value (if / and / or / a comparison's truth): use "
                      "pycute.kernels.where(condition, a, b)")

    def __float__(self) -> float:
        raise _refuse("a traced value turned into a Python float (math.* or float(x)): use pycute.kernels' "
                      "functions (exp, tanh, sqrt, ...)")

    def __int__(self) -> int:
        raise _refuse("a traced value turned into an int")

    def __index__(self) -> int:
        raise _refuse("a traced value used as an index")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> "Value":
        names = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
                 "negative": "neg", "absolute": "abs", "tanh": "tanh", "exp": "exp", "log": "log", "sqrt": "sqrt",
                 "minimum": "min", "maximum": "max", "greater": "gt", "greater_equal": "ge", "less": "lt",
                 "less_equal": "le"}
        if method != "__call__" or ufunc.__name__ not in names or kwargs:
            raise _refuse(f"numpy's {ufunc.__name__} has no traced form")
        return _apply(names[ufunc.__name__], *inputs)

    def __repr__(self) -> str:
        return f"Value({self.expr.text})"


def _expr(x: Any) -> Expr:
    if isinstance(x, Value):
        return x.expr
    if isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool):
        if not math.isfinite(float(x)):
            raise _refuse(f"the constant {x!r} is not finite")
        return Expr("const", value=float(x))
    raise _refuse(f"{type(x).__name__} {x!r} is neither a traced value nor a number")


def _apply(op: str, *args: Any) -> Value:
    return Value(Expr(op, tuple(_expr(a) for a in args)))


def _unary(op: str, doc: str) -> Callable[[Any], Value]:
    def fn(x: Any) -> Value:
        return _apply(op, x)
    fn.__name__, fn.__doc__ = op, doc
    return fn


relu = _unary("relu", "max(x, 0).")
gelu = _unary("gelu", "x * Phi(x), the erf form (torch.nn.functional.gelu's default).")
gelu_tanh = _unary("gelu_tanh", "GELU's tanh approximation (torch's approximate='tanh').")
silu = _unary("silu", "x * sigmoid(x).")
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x)).")
tanh = _unary("tanh", "tanh(x).")
exp = _unary("exp", "e^x.")
log = _unary("log", "the natural logarithm.")
sqrt = _unary("sqrt", "the square root.")
rsqrt = _unary("rsqrt", "1 / sqrt(x).")


def minimum(a: Any, b: Any) -> Value:
    return _apply("min", a, b)


def maximum(a: Any, b: Any) -> Value:
    return _apply("max", a, b)


def clamp(x: Any, lo: Any, hi: Any) -> Value:
    return minimum(maximum(x, lo), hi)


def where(condition: Any, a: Any, b: Any) -> Value:
    """``a`` where ``condition`` (a comparison of traced values) holds, else ``b``."""
    c = _expr(condition)
    if c.op not in ("gt", "ge", "lt", "le"):
        raise _refuse(f"where's condition is a comparison (>, >=, <, <=), not {c.text}")
    return _apply("where", condition, a, b)


def _annotation(fn: Callable[..., Any], annotation: Any) -> Any:
    """An annotation as a type: text (``from __future__ import annotations``) is evaluated in ``fn``'s module, or
    read by its last name where that names a module imported inside a function (``pk.Row``)."""
    if not isinstance(annotation, str):
        return None if annotation is inspect.Parameter.empty else annotation
    try:
        return eval(annotation, getattr(fn, "__globals__", {}), {})       # noqa: S307  the user's own annotation
    except Exception:                                       # noqa: BLE001  an annotation that does not resolve
        kind = {t.__name__: t for t in _KINDS}.get(annotation.rsplit(".", 1)[-1])
        if kind is None:
            raise _refuse(f"the annotation {annotation!r} of {fn.__name__!r} does not resolve") from None
        return kind


def trace(fn: Callable[..., Any]) -> Expr:
    """``fn(acc, **inputs)`` called on symbolic values: its first parameter is the accumulator, every other one an
    input whose kind its annotation gives (``Row``, ``Col``, ``Residual`` or ``float``)."""
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        raise _refuse(f"{getattr(fn, '__name__', fn)!r} takes no accumulator argument")
    args = [Value(Expr("acc"))]
    for p in params[1:]:
        annotation = _annotation(fn, p.annotation)
        kind = _KINDS.get(annotation)
        if kind is None or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise _refuse(f"input {p.name!r} of {fn.__name__!r} is annotated {annotation!r}: annotate each "
                          f"input pycute.kernels.Row, Col, Residual or float")
        if not _NAME.match(p.name) or p.name in ("acc", "scale"):
            raise _refuse(f"input {p.name!r}: a C identifier other than acc and scale")
        args.append(Value(Expr("input", name=p.name, kind=kind)))
    out = fn(*args)
    expr = _expr(out)
    if expr.op in ("gt", "ge", "lt", "le"):
        raise _refuse("the result is a comparison; wrap it in where(...)")
    expr.inputs()
    return expr


# ---- the canonical text, parsed back ------------------------------------------------------------------------------
def parse(text: str) -> Expr:
    """The expression whose ``text`` is ``text`` (the inverse of ``Expr.text``)."""
    tokens = re.findall(r"\(|\)|[^\s()]+", text)
    pos = 0

    def node() -> Expr:
        nonlocal pos
        if pos >= len(tokens):
            raise PlanError(f"epilogue text {text!r} ends early")
        tok = tokens[pos]
        pos += 1
        if tok == "acc":
            return Expr("acc")
        if tok != "(":
            try:
                return Expr("const", value=float(tok))
            except ValueError:
                raise PlanError(f"epilogue text {text!r}: {tok!r} is not acc, a number or a form") from None
        head = tokens[pos]
        pos += 1
        if head in ("row", "col", "residual", "scalar"):
            name = tokens[pos]
            pos += 2                                        # the name and ")"
            return Expr("input", name=name, kind=head)
        if head not in FUNCTIONS:
            raise PlanError(f"epilogue text {text!r}: unknown operation {head!r}")
        args = []
        while tokens[pos] != ")":
            args.append(node())
        pos += 1
        want = 1 if head in UNARY else 2 if head in BINARY else 3
        if len(args) != want:
            raise PlanError(f"epilogue text {text!r}: {head} takes {want} operand(s), not {len(args)}")
        return Expr(head, tuple(args))
    try:
        out = node()
    except IndexError:
        raise PlanError(f"epilogue text {text!r} ends early") from None
    if pos != len(tokens):
        raise PlanError(f"epilogue text {text!r} has text after its expression")
    return out


# ---- CUDA ---------------------------------------------------------------------------------------------------------
_C_BINARY = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "div": "{} / {}", "min": "fminf({}, {})",
             "max": "fmaxf({}, {})", "gt": "{} > {}", "ge": "{} >= {}", "lt": "{} < {}", "le": "{} <= {}"}
_C_UNARY = {"neg": "-{}", "abs": "fabsf({})", "relu": "fmaxf({}, 0.0f)", "tanh": "tanhf({})", "exp": "expf({})",
            "log": "logf({})", "sqrt": "sqrtf({})", "rsqrt": "rsqrtf({})",
            "sigmoid": "1.0f / (1.0f + expf(-{}))",
            "silu": "{0} / (1.0f + expf(-{0}))",
            "gelu": "0.5f * {0} * (1.0f + erff({0} * 0.70710678118654752f))",
            "gelu_tanh": "0.5f * {0} * (1.0f + tanhf(0.79788456080286536f * ({0} + 0.044715f * {0} * {0} * {0})))"}


def _c_float(v: float) -> str:
    text = repr(float(v))
    return (text if ("e" in text or "." in text) else text + ".0") + "f"


def c_expression(expr: Expr, names: dict[str, str], result: str = "out") -> list[str]:
    """Straight-line CUDA computing ``expr`` into ``float result``: one ``const`` per operation, the accumulator
    and each input read from the C expression ``names`` gives (``names["acc"]``, ``names[input]``)."""
    lines, value = [], {}
    for k, e in enumerate(expr.nodes()):
        if e.op == "acc":
            value[e] = names["acc"]
        elif e.op == "input":
            value[e] = names[e.name]
        elif e.op == "const":
            value[e] = _c_float(e.value)
        else:
            args = [value[a] for a in e.args]
            if e.op == "where":
                text = f"({args[0]}) ? {args[1]} : {args[2]}"
            elif e.op in _C_BINARY:
                text = _C_BINARY[e.op].format(*args)
            else:
                text = _C_UNARY[e.op].format(*args)
            kind = "bool" if e.op in ("gt", "ge", "lt", "le") else "float"
            lines.append(f"const {kind} e{k} = {text};")
            value[e] = f"e{k}"
    return lines + [f"{result} = {value[expr]};"]


# ---- the float64 reference ----------------------------------------------------------------------------------------
def _ops(torch_like: bool) -> dict[str, Callable[..., Any]]:
    if torch_like:
        import importlib
        torch = importlib.import_module("torch")
        erf, where_ = torch.special.erf, torch.where
        fmin, fmax = torch.minimum, torch.maximum
        tanh_, exp_, log_, sqrt_ = torch.tanh, torch.exp, torch.log, torch.sqrt
    else:
        erf, where_, fmin, fmax = np.vectorize(math.erf, otypes=[np.float64]), np.where, np.minimum, np.maximum
        tanh_, exp_, log_, sqrt_ = np.tanh, np.exp, np.log, np.sqrt
    return {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "div": lambda a, b: a / b, "min": fmin, "max": fmax, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
            "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "neg": lambda a: -a, "abs": abs,
            "relu": lambda a: fmax(a, 0 * a), "tanh": tanh_, "exp": exp_, "log": log_, "sqrt": sqrt_,
            "rsqrt": lambda a: 1 / sqrt_(a), "sigmoid": lambda a: 1 / (1 + exp_(-a)),
            "silu": lambda a: a / (1 + exp_(-a)), "gelu": lambda a: 0.5 * a * (1 + erf(a / math.sqrt(2.0))),
            "gelu_tanh": lambda a: 0.5 * a * (1 + tanh_(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))),
            "where": lambda c, a, b: where_(c, a, b)}


def evaluate(expr: Expr, acc: Any, inputs: dict[str, Any]) -> Any:
    """``expr`` over an M x N accumulator (float64 numpy, or a torch tensor: then in torch, on its device): a row
    input (M values) broadcasts along N, a column input (N values) along M, a residual is M x N, a scalar a
    number."""
    torch_like = not isinstance(acc, np.ndarray)
    ops, value = _ops(torch_like), {}
    for e in expr.nodes():
        if e.op == "acc":
            value[e] = acc
        elif e.op == "const":
            value[e] = e.value
        elif e.op == "input":
            x = inputs[e.name]
            value[e] = x[:, None] if e.kind == "row" else x[None, :] if e.kind == "col" else x
        else:
            value[e] = ops[e.op](*(value[a] for a in e.args))
    out = value[expr]
    return out if not isinstance(out, float) else acc * 0 + out
