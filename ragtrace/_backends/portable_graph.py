"""Graph rewrites that make an ONNX encoder compute the same numbers on every x86-64 CPU.

ONNX Runtime picks some CPU kernels when it starts, by the processor's instruction sets (AVX2,
AVX-512, AVX-512 VNNI). Most of the kernels MiniLM runs give the same bits whichever is picked;
one does not: ``Softmax`` sums its exponentials in an order set by the vector width, so its last
bit differs between an AVX2 and an AVX-512 processor. In a float32 model that is noise (cosines
move by < 1e-6). In the int8 copy it is not: each weight product quantizes its input with a scale
taken from that pass, so one flipped bit can move a value to the next quantization step, and the
step is carried through the later layers (measured on 200 RAGTruth sentences, an AVX2 processor
against an AVX-512 VNNI one: cosine 0.99992 on average, 0.993 at worst).

``softmax_spelled_out(model)`` replaces each ``Softmax`` over the last axis with the operators
that define it (``ReduceMax``, ``Sub``, ``Exp``, ``ReduceSum``, ``Div``), whose ONNX Runtime CPU
kernels are compiled once for every x86-64 processor, so they give the same bits everywhere.
With the int8 copy's 7-bit weights (``ragtrace._backends.dynamic_int8``), whose integer products
are exact on every kernel, the copy's vectors are then bit-for-bit the same on AVX2 and AVX-512
processors (docs/decisions/same-vectors-on-every-cpu.md). The rewrite costs nothing measurable
(the default suite, cold and warm records: 0.996 and 0.997 of the earlier copy's CPU).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SOFTMAX_AXES", "softmax_spelled_out"]

SOFTMAX_AXES = "ragtrace_softmax_last_axis"  # the initializer naming the axis ReduceSum reads


def softmax_spelled_out(model: Any) -> int:
    """Rewrite, in place, each ``Softmax`` of ``model`` (an ``onnx.ModelProto``) over its last
    axis as ``exp(x - max(x)) / sum(exp(x - max(x)))``; the number of nodes rewritten.

    Raises:
        ValueError: A ``Softmax`` over another axis (MiniLM has none), or an opset whose
            ``ReduceMax`` takes its axes as an input (opset 18 and later), which this rewrite
            does not write.
    """
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    softmaxes = [n for n in graph.node if n.op_type == "Softmax"]
    if not softmaxes:
        return 0
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if not 13 <= opset < 18:
        raise ValueError(f"spelling out Softmax is written for opsets 13 to 17, not {opset}")
    rewritten: list[Any] = []
    for node in graph.node:
        if node.op_type != "Softmax":
            rewritten.append(node)
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
        if axis != -1:
            raise ValueError(f"Softmax {node.name!r} is over axis {axis}, not the last one")
        rewritten.extend(_spelled_out(helper, node))
    if not any(i.name == SOFTMAX_AXES for i in graph.initializer):
        import numpy as np

        axes = numpy_helper.from_array(np.array([-1], dtype=np.int64), SOFTMAX_AXES)
        graph.initializer.append(axes)
    del graph.node[:]
    graph.node.extend(rewritten)
    onnx.checker.check_model(model)
    return len(softmaxes)


def _spelled_out(helper: Any, node: Any) -> list[Any]:
    x, y = node.input[0], node.output[0]
    name = node.name or y
    peak, shifted, powers, total = (f"{name}/{part}" for part in ("max", "shift", "exp", "sum"))
    return [
        helper.make_node("ReduceMax", [x], [peak], name=peak, axes=[-1], keepdims=1),
        helper.make_node("Sub", [x, peak], [shifted], name=shifted),
        helper.make_node("Exp", [shifted], [powers], name=powers),
        helper.make_node("ReduceSum", [powers, SOFTMAX_AXES], [total], name=total, keepdims=1),
        helper.make_node("Div", [powers, total], [y], name=f"{name}/div"),
    ]
