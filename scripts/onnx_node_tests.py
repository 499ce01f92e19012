#!/usr/bin/env python3
"""Generate the official ONNX backend test cases offline, for `dmove conformance DIR`.

The `onnx` wheel ships the node test *definitions* (`onnx.backend.test.case.node`); this script
runs them and writes every case as

    DIR/<case>/model.onnx
    DIR/<case>/test_data_set_0/input_<k>.pb   (TensorProto, onnx's own serializer)
    DIR/<case>/test_data_set_0/output_<k>.pb

exactly as `onnx/backend/test/cmd_tools.py generate-data` does. It also copies the wheel's stored
`pytorch-converted`, `pytorch-operator` and `simple` cases, and turns each `light` model (real
architectures: ResNet-50, DenseNet-121, …) into the same layout, with the deterministic input the
onnx runner uses for them (`arange(n) / n`) and the stored expected output.

Two releases are used, each with its own manifest of cases expected to pass (pin the version
so the manifest stays meaningful):

    # the pinned release: node, stored and light cases -> tests/conformance/expected_pass.txt
    python3 -m pip install onnx==1.17.0 numpy
    python3 scripts/onnx_node_tests.py [DIR]        # default: target/onnx-node-tests

    # the newest release, in its own environment: node cases only (the stored and light cases
    # are the pinned release's files) -> tests/conformance/expected_pass_newest.txt
    python3 -m venv target/onnx-newest-venv
    target/onnx-newest-venv/bin/pip install onnx==1.23.2 numpy
    target/onnx-newest-venv/bin/python scripts/onnx_node_tests.py --node-only target/onnx-node-tests-newest

Bump NEWEST (and regenerate `src/onnx/schemas.rs` with `scripts/onnx_schemas.py` and the newest
manifest with `dmove conformance … --write-manifest`) when a new onnx release comes out.

Only dense-tensor cases are written: sequences, maps and optionals have no counterpart in dmove.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import warnings

import numpy as np

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases

PINNED = "1.17.0"
NEWEST = "1.23.2"
STORED_KINDS = ("pytorch-converted", "pytorch-operator", "simple")


def is_dense(value_info: onnx.ValueInfoProto) -> bool:
    return value_info.type.HasField("tensor_type")


def to_proto(value, name: str) -> onnx.TensorProto:
    if isinstance(value, onnx.TensorProto):
        return value
    return numpy_helper.from_array(np.asarray(value), name)


def write_case(root: str, name: str, model: onnx.ModelProto, inputs, outputs) -> None:
    """`inputs` / `outputs` are (tensor name, value) pairs in the model's order."""
    case_dir = os.path.join(root, name)
    data_dir = os.path.join(case_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for kind, pairs in (("input", inputs), ("output", outputs)):
        for k, (tensor, value) in enumerate(pairs):
            with open(os.path.join(data_dir, f"{kind}_{k}.pb"), "wb") as f:
                f.write(to_proto(value, tensor).SerializeToString())


def node_tests(root: str) -> tuple[int, int]:
    """Writes every node case with dense inputs and outputs; returns (written, skipped)."""
    written = skipped = 0
    for case in node_cases.collect_testcases(None):
        graph = case.model.graph
        if not all(is_dense(v) for v in list(graph.input) + list(graph.output)):
            skipped += 1
            continue
        (inputs, outputs), *_ = case.data_sets
        write_case(
            root,
            case.name,
            case.model,
            list(zip([v.name for v in graph.input], inputs)),
            list(zip([v.name for v in graph.output], outputs)),
        )
        written += 1
    return written, skipped


def stored_tests(root: str, data_dir: str) -> int:
    """Copies the wheel's stored cases that already have the standard layout."""
    copied = 0
    for kind in STORED_KINDS:
        kind_dir = os.path.join(data_dir, kind)
        if not os.path.isdir(kind_dir):
            continue
        for name in sorted(os.listdir(kind_dir)):
            src = os.path.join(kind_dir, name)
            if os.path.isfile(os.path.join(src, "model.onnx")):
                shutil.copytree(src, os.path.join(root, f"{kind}_{name}"), dirs_exist_ok=True)
                copied += 1
    return copied


def dummy_input(value_info: onnx.ValueInfoProto) -> np.ndarray:
    """The onnx runner's input for light models: unknown dimensions are 1, values arange/n."""
    shape = tuple(
        d.dim_value if d.HasField("dim_value") else 1
        for d in value_info.type.tensor_type.shape.dim
    )
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def light_tests(root: str, data_dir: str) -> int:
    """Each `light_<model>.onnx` with its stored `light_<model>_output_<k>.pb` becomes a case."""
    light = os.path.join(data_dir, "light")
    if not os.path.isdir(light):
        return 0
    made = 0
    for file in sorted(os.listdir(light)):
        if not file.endswith(".onnx"):
            continue
        prefix = os.path.join(light, file[: -len(".onnx")])
        model = onnx.load(prefix + ".onnx")
        inits = {t.name for t in model.graph.initializer}
        inputs = [(v.name, dummy_input(v)) for v in model.graph.input if v.name not in inits]
        outputs = []
        for k, v in enumerate(model.graph.output):
            expected = onnx.TensorProto()
            with open(f"{prefix}_output_{k}.pb", "rb") as f:
                expected.ParseFromString(f.read())
            outputs.append((v.name, expected))
        write_case(root, os.path.basename(prefix), model, inputs, outputs)
        made += 1
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=os.path.join("target", "onnx-node-tests"))
    parser.add_argument(
        "--node-only",
        action="store_true",
        help="write only the node cases (not the wheel's stored and light cases)",
    )
    args = parser.parse_args()
    if onnx.__version__ not in (PINNED, NEWEST):
        print(
            f"warning: onnx {onnx.__version__} is installed; the manifests were made with "
            f"{PINNED} (pinned) and {NEWEST} (newest)",
            file=sys.stderr,
        )
    # Some case definitions compute their expected infinities by dividing by zero on purpose.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    start = time.monotonic()
    if os.path.exists(args.dir):
        shutil.rmtree(args.dir)
    os.makedirs(args.dir)
    data_dir = os.path.join(os.path.dirname(onnx.backend.test.__file__), "data")
    written, skipped = node_tests(args.dir)
    copied = 0 if args.node_only else stored_tests(args.dir, data_dir)
    light = 0 if args.node_only else light_tests(args.dir, data_dir)
    print(
        f"onnx {onnx.__version__}: {written} node cases ({skipped} non-tensor skipped), "
        f"{copied} stored cases, {light} light models -> {args.dir} "
        f"in {time.monotonic() - start:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
