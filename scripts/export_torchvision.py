#!/usr/bin/env python3
"""Exports torchvision networks to ONNX the way a user does, for `dmove bench MODEL`.

    apt-get install python3-torch python3-torchvision     # Debian's CPU builds (torch 1.13)
    /usr/bin/python3 scripts/export_torchvision.py OUTDIR [NAME ...]

Each NAME (default: resnet18 mobilenet_v2 efficientnet_b0 resnet50) is built by
`torchvision.models.NAME(weights=None)` with seeded random weights (nothing is downloaded),
put in eval mode and exported with `torch.onnx.export` at batch 1, 3×224×224, opset 17, input
`input` and output `output`, to OUTDIR/NAME.onnx. docs/benchmarks.md ("Whole networks") runs
`dmove bench OUTDIR/NAME.onnx` on them.

Exit status 3 with a line `UNAVAILABLE why` when torch or torchvision cannot be imported.
"""

import os
import sys

try:
    import torch
    import torchvision
except ImportError as e:
    print("UNAVAILABLE " + str(e))
    sys.exit(3)

DEFAULT = ["resnet18", "mobilenet_v2", "efficientnet_b0", "resnet50"]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or DEFAULT:
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(
            model, x, path, opset_version=17, input_names=["input"], output_names=["output"]
        )
        print("wrote", path)


if __name__ == "__main__":
    main()
