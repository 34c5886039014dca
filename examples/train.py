"""A stand-in for a training script, for the docs' examples: it reads its learning rate from
`--lr` (or `$LR`), "trains" for a few seconds and prints its loss. Needs only Python."""

import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=float(os.environ.get("LR", "0.1")))
parser.add_argument("--steps", type=int, default=5)
args = parser.parse_args()
loss = 1.0
for step in range(args.steps):
    time.sleep(0.5)
    loss *= 1 - min(args.lr, 0.9)
    print(f"step {step} loss {loss:.4f}", flush=True)
print(f"lr {args.lr} final loss {loss:.4f}")
