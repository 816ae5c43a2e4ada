"""The spelled-out softmax computes what ONNX Runtime's Softmax computes, and the int8 copy
carries it with weights that no 16-bit sum of products can overflow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ragtrace._backends import dynamic_int8
from ragtrace._backends.embeddings import _packaged_onnx
from ragtrace._backends.portable_graph import softmax_spelled_out


def _softmax_model(axis: int = -1, opset: int = 17) -> onnx.ModelProto:
    node = helper.make_node("Softmax", ["x"], ["y"], name="attention", axis=axis)
    graph = helper.make_graph(
        [node],
        "softmax",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 5])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_the_spelled_out_softmax_gives_softmax_also_on_masked_rows() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(scale=8.0, size=(2, 3, 5)).astype(np.float32)
    x[0, 1, 2:] = -np.inf  # a padded key, as an attention mask writes it
    x[1, 2, :] = -3.0e38  # a row of huge negatives: no overflow past the max shift
    model = _softmax_model()
    fused = _run(model, x)
    assert softmax_spelled_out(model) == 1
    assert [n.op_type for n in model.graph.node] == ["ReduceMax", "Sub", "Exp", "ReduceSum", "Div"]
    spelled = _run(model, x)
    np.testing.assert_allclose(spelled, fused, rtol=1e-6, atol=1e-7)
    assert np.all(spelled[0, 1, 2:] == 0.0)
    np.testing.assert_allclose(spelled.sum(axis=-1), 1.0, rtol=1e-6)


def test_a_graph_without_softmax_is_left_alone() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert softmax_spelled_out(model) == 0
    assert [n.op_type for n in model.graph.node] == ["Relu"] and not model.graph.initializer


def test_what_it_does_not_rewrite_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="over axis 1, not the last one"):
        softmax_spelled_out(_softmax_model(axis=1))
    with pytest.raises(ValueError, match="opsets 13 to 17, not 18"):
        softmax_spelled_out(_softmax_model(opset=18))


def test_the_int8_copy_has_no_fused_softmax_and_7_bit_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(dynamic_int8.CACHE_ENV, str(tmp_path))
    copy = onnx.load(str(dynamic_int8.int8_copy(_packaged_onnx())))
    ops = [n.op_type for n in copy.graph.node]
    assert "Softmax" not in ops and ops.count("Exp") == 6  # MiniLM-L6: one a layer
    int8 = [
        numpy_helper.to_array(t) for t in copy.graph.initializer if t.data_type == TensorProto.INT8
    ]
    weights = [w for w in int8 if w.ndim == 2]  # beside them, each product's zero points
    assert len(weights) == 36  # six products a layer, six layers
    # 255 * 64 * 2 = 32,640: a pair of products fits a signed 16-bit sum
    assert max(int(np.abs(w.astype(np.int32)).max()) for w in weights) <= 64
