"""A long job that survives its allocation: it counts steps, keeps a checkpoint in the run's
private directory ($RAYSLURM_RUN_DIR, the same for every attempt and for the runs of a chain),
and resumes from it.

  rayslurm launch --exp-name count --requeue --time 3 --stop-grace 60 \
      --command "python examples/resumable_counter.py 125"

On SIGTERM (what rayslurm sends before the time limit; choose another with --signal) it saves
its step and exits 0: the run is requeued, and the next attempt starts where this one stopped.
On SIGUSR1 (`rayslurm cancel RUN --signal USR1`) it saves and goes on.
"""

import json
import os
import signal
import sys
import time

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
seconds_per_step = float(os.environ.get("STEP_SECONDS", "1"))
checkpoint = os.path.join(os.environ["RAYSLURM_RUN_DIR"], "counter.json")


def save(step):
    tmp = checkpoint + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"step": step}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, checkpoint)


step = 0
if os.path.exists(checkpoint):
    with open(checkpoint) as f:
        step = json.load(f)["step"]
attempt = int(os.environ.get("RAYSLURM_RESTART_COUNT", "0")) + 1
print(f"attempt {attempt}: starting at step {step} of {steps}", flush=True)

stop = False
save_now = False


def on_stop(signum, frame):
    global stop
    stop = True


def on_save(signum, frame):
    global save_now
    save_now = True


signal.signal(signal.SIGTERM, on_stop)
signal.signal(signal.SIGUSR1, on_save)
while step < steps and not stop:
    time.sleep(seconds_per_step)
    step += 1
    if save_now:
        save(step)
        save_now = False
        print(f"checkpoint at step {step} (asked); going on", flush=True)
save(step)
if stop:
    print(f"stopping: checkpoint at step {step}", flush=True)
else:
    print(f"done at step {step}", flush=True)
