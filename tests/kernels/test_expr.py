"""The epilogue tracer: a Python function of the accumulator and named inputs becomes one expression -- operators,
pycute's functions and numpy's ufuncs recorded, inputs typed by their annotations -- whose canonical text parses
back to it, whose CUDA is straight-line, and whose float64 value is the built-in activations' reference; what it
cannot express is refused naming what to write instead."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
import pycute.kernels as pk
from pycute.kernels.expr import BINARY, UNARY, Expr, c_expression, evaluate, parse, trace
from pycute.testing import activation


def test_operators_and_functions_record_one_expression_with_typed_inputs():
    def f(acc, s: pk.Row, bias: pk.Col, r: pk.Residual, alpha: float):
        return pk.where(acc > 0, pk.silu(acc * s + bias), -acc * alpha) + r / 2
    e = trace(f)
    assert e.text == ("(add (where (gt acc 0.0) (silu (add (mul acc (row s)) (col bias))) (mul (neg acc) "
                      "(scalar alpha))) (div (residual r) 2.0))")
    assert e.inputs() == (("s", "row"), ("bias", "col"), ("alpha", "scalar"), ("r", "residual"))


def test_numpy_ufuncs_and_constant_powers_are_traced():
    assert trace(lambda acc: np.tanh(acc) * np.maximum(acc, 0.5)).text == "(mul (tanh acc) (max acc 0.5))"
    assert trace(lambda acc: acc ** 2 + acc ** 0.5).text == "(add (mul acc acc) (sqrt acc))"


@pytest.mark.parametrize("fn, error", [
    (lambda acc: acc if acc > 0 else 0.0, r"Python control flow on a traced value .* use pycute.kernels.where"),
    (lambda acc: math.exp(acc), r"turned into a Python float \(math.\* or float\(x\)\): use pycute.kernels' "),
    (lambda acc: acc ** acc, r"x \*\* Value\(acc\): only the constant powers 1, 2, 3 and 0.5"),
    (lambda acc: np.sin(acc), r"numpy's sin has no traced form"),
    (lambda acc: acc > 0, r"the result is a comparison; wrap it in where"),
    (lambda acc: acc + float("inf"), r"the constant inf is not finite"),
    (lambda acc: acc + "1", r"str '1' is neither a traced value nor a number")])
def test_what_the_tracer_cannot_express_is_refused(fn, error):
    with pytest.raises(pc.PlanError, match=error):
        trace(fn)


def test_an_input_without_a_kind_is_refused():
    def f(acc, bias):
        return acc + bias
    with pytest.raises(pc.PlanError, match=r"input 'bias' of 'f' is annotated None: annotate each input"):
        trace(f)


def test_text_annotations_naming_a_module_imported_inside_a_function_are_read_by_their_kind():
    # what ``from __future__ import annotations`` leaves when the kinds come from ``import pycute.kernels as kk``
    # inside the function that defines the epilogue: the text "kk.Col" names a module the epilogue's globals lack
    def gated(acc, bias: "kk.Col", gate: "kk.Residual", alpha: "float"):
        return (acc + bias) * gate * alpha
    assert trace(gated).inputs() == (("bias", "col"), ("gate", "residual"), ("alpha", "scalar"))


def test_a_text_annotation_that_names_no_kind_is_refused():
    def f(acc, bias: "kk.Vector"):
        return acc + bias
    with pytest.raises(pc.PlanError, match=r"the annotation 'kk.Vector' of 'f' does not resolve"):
        trace(f)


def test_an_epilogue_knows_its_inputs_without_walking_its_expression_again():
    # a torch op reads them on every call (under torch.compile, Dynamo traces the reads)
    e = pk.bias_activation(bias=True, activation="relu", residual=True)
    assert (e.tensors, e.scalars, e.text) == (("bias", "residual"), (), e.expr.text)
    assert all(not isinstance(getattr(type(e), name, None), property) for name in ("inputs", "tensors", "text"))


def test_where_takes_a_comparison():
    with pytest.raises(pc.PlanError, match=r"where's condition is a comparison"):
        trace(lambda acc: pk.where(acc, acc, 0.0))


def _exprs():
    leaf = st.one_of(st.just(Expr("acc")), st.floats(-4, 4, allow_nan=False).map(lambda v: Expr("const", value=v)),
                     st.sampled_from([Expr("input", name=n, kind=k) for n, k in
                                      (("x", "row"), ("y", "col"), ("r", "residual"), ("s", "scalar"))]))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.builds(lambda op, a: Expr(op, (a,)), st.sampled_from(UNARY), inner),
        st.builds(lambda op, a, b: Expr(op, (a, b)), st.sampled_from(BINARY[:6]), inner, inner)), max_leaves=8)


@settings(max_examples=60)
@given(_exprs())
def test_the_canonical_text_parses_back_to_the_expression(e):
    assert parse(e.text) == e


@pytest.mark.parametrize("text, error", [("(sin acc)", r"unknown operation 'sin'"), ("(add acc)", r"add takes 2"),
                                         ("(relu acc) acc", r"text after its expression"), ("(relu", r"ends early")])
def test_a_text_that_is_no_expression_is_refused(text, error):
    with pytest.raises(pc.PlanError, match=error):
        parse(text)


def test_the_cuda_is_one_const_per_operation_of_the_named_values():
    assert c_expression(trace(lambda acc: acc), {"acc": "x"}) == ["out = x;"]
    e = pk.bias_activation(True, "relu").expr
    assert c_expression(e, {"acc": "x", "bias": "cb"}) == ["const float e2 = x + cb;",
                                                           "const float e3 = fmaxf(e2, 0.0f);", "out = e3;"]


@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh", "silu"])
def test_the_built_in_activations_evaluate_as_pycute_testing_says(name):
    acc = np.linspace(-6, 6, 97).reshape(1, -1)
    got = evaluate(pk.bias_activation(activation=name).expr, acc, {})
    assert np.allclose(got, activation(acc, name), rtol=1e-14, atol=1e-14)


def test_rows_columns_and_residuals_broadcast_as_their_kinds_say():
    def f(acc, r: pk.Row, c: pk.Col, t: pk.Residual, s: float):
        return acc * r + c + t * s
    acc = np.ones((2, 3))
    got = evaluate(trace(f), acc, {"r": np.array([1.0, 2.0]), "c": np.array([0.0, 10.0, 20.0]),
                                   "t": np.full((2, 3), 3.0), "s": 0.5})
    assert np.array_equal(got, [[2.5, 12.5, 22.5], [3.5, 13.5, 23.5]])
