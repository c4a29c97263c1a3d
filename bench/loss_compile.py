"""MMDLoss's first eager step and ``torch.compile`` of it (issue 43, items 7 and 8).

1. ``first``: in a fresh process, the modules imported (``len(sys.modules)``) and the
   seconds of ``import torch``, ``import nystrom_kme.torch``, building the loss, and its
   first forward + backward; whether ``torch._dynamo`` / ``torch._inductor`` were imported.
2. ``compile``: in a fresh process per backend (``aot_eager``, ``inductor``) with an empty
   inductor cache (cold: what a first run pays; inductor compiles C++ with the system
   compiler), ``torch.compile(loss)`` stepped (forward + backward) over batches of sizes
   ``SIZES``: the seconds of each step, the graphs dynamo compiled, and the largest
   difference of loss and gradient from the eager loss (float64, Matérn 3/2, 60
   landmarks, d = 3).

    python -m bench.loss_compile
    python -m bench.loss_compile --no-editable   # with another version first on PYTHONPATH

Prints Markdown tables. Without torch it says so on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

SIZES = (16, 32, 48, 17, 64, 128)

_DROP_EDITABLE = "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__]\n"

_FIRST = """
import json, sys, time
t0 = time.perf_counter(); n0 = len(sys.modules)
import torch
t1 = time.perf_counter(); n1 = len(sys.modules)
import numpy as np, nystrom_kme as nk
from nystrom_kme.torch import MMDLoss
t2 = time.perf_counter(); n2 = len(sys.modules)
X = np.random.default_rng(0).normal(size=(2000, 3))
loss = MMDLoss(X, nk.Gaussian(1.0), n_landmarks=60, random_state=0)
t3 = time.perf_counter(); n3 = len(sys.modules)
y = torch.randn(32, 3, dtype=torch.float64, requires_grad=True)
loss(y).backward()
t4 = time.perf_counter(); n4 = len(sys.modules)
print(json.dumps({"import torch": [t1 - t0, n1 - n0], "import nystrom_kme.torch": [t2 - t1, n2 - n1],
                  "MMDLoss(X, ...)": [t3 - t2, n3 - n2], "first forward + backward": [t4 - t3, n4 - n3],
                  "modules": n4, "dynamo": "torch._dynamo" in sys.modules,
                  "inductor": "torch._inductor" in sys.modules}))
"""

_COMPILE = """
import json, sys, time
import torch, numpy as np, nystrom_kme as nk
from nystrom_kme.torch import MMDLoss
from torch._dynamo.utils import counters
X = np.random.default_rng(0).normal(size=(2000, 3))
loss = MMDLoss(X, nk.Matern(1.3, nu=1.5), n_landmarks=60, random_state=0)
compiled = torch.compile(loss, backend=BACKEND)
steps, worst = [], 0.0
for i, B in enumerate(SIZES):
    y = torch.from_numpy(np.random.default_rng(i).normal(size=(B, 3))).requires_grad_()
    t = time.perf_counter()
    value = compiled(y)
    (g,) = torch.autograd.grad(value, y)
    steps.append(time.perf_counter() - t)
    y2 = y.detach().requires_grad_()
    want = loss(y2)
    (g2,) = torch.autograd.grad(want, y2)
    worst = max(worst, float((value - want).abs()), float((g - g2).abs().max()))
print(json.dumps({"steps": steps, "graphs": counters["stats"]["unique_graphs"], "worst": worst}))
"""


def _run(code: str, env: dict[str, str], no_editable: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", (_DROP_EDITABLE if no_editable else "") + code],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-editable", action="store_true", help="drop the editable install's import hook")
    parser.add_argument("--backends", nargs="*", default=["aot_eager", "inductor"])
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("bench.loss_compile needs torch", file=sys.stderr)
        return 2
    env = dict(os.environ)
    first = _run(_FIRST, env, args.no_editable)
    print("| step | seconds | modules imported |\n|---|---|---|")
    for key in ("import torch", "import nystrom_kme.torch", "MMDLoss(X, ...)", "first forward + backward"):
        print(f"| {key} | {first[key][0]:.2f} | {first[key][1]} |")
    print(
        f"\nmodules in all: {first['modules']}; torch._dynamo imported: {first['dynamo']}, "
        f"torch._inductor: {first['inductor']}\n"
    )
    print(f"| backend | seconds per step, batch sizes {', '.join(map(str, SIZES))} | graphs | max difference |")
    print("|---|---|---|---|")
    for backend in args.backends:
        with tempfile.TemporaryDirectory() as cache:
            code = _COMPILE.replace("BACKEND", repr(backend)).replace("SIZES", repr(SIZES))
            res = _run(code, dict(env, TORCHINDUCTOR_CACHE_DIR=cache), args.no_editable)
        steps = ", ".join(f"{t:.2f}" for t in res["steps"])
        print(f"| {backend} | {steps} (total {sum(res['steps']):.1f}) | {res['graphs']} | {res['worst']:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
