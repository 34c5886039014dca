# The driver of `rayslurm exec CLUSTER --per-node -n K`: written by rayslurm into the job's
# private record folder and run by Ray's Jobs API as the job's entrypoint, on the cluster's
# head. It reserves one bundle on each of K distinct nodes (a STRICT_SPREAD placement group,
# so the job waits in Ray's queue until K nodes have room), runs the setup on every rank, then
# (once every setup has succeeded) the command, each rank with the rank variables of a
# `--per-node` launch. Output comes back line by line with a `[RANK NODE] ` prefix. The first
# rank to fail stops the others and its exit code is the job's; a stop request (`rayslurm
# cancel`, SIGTERM from Ray) stops every rank, its process group first politely, then not.
#
# argv[1]: the job's spec (JSON, written by rayslurm beside this file).

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import ray
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

STOP_GRACE_S = 10
POLL_S = 0.2
stop_requested = threading.Event()


def say(text):
    sys.stdout.buffer.write(("rayslurm: " + text + "\n").encode())
    sys.stdout.buffer.flush()


class Rank:
    """One rank's process on its node: run, read, stop."""

    def where(self):
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return ray.util.get_node_ip_address(), socket.gethostname().split(".")[0], port

    def start(self, command, env, workdir):
        full = dict(os.environ)
        full.update(env)
        full.pop("RAY_AUTH_TOKEN", None)
        self.buf = bytearray()
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=workdir,
            env=full,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        self.reader = threading.Thread(target=self.read_all, daemon=True)
        self.reader.start()

    def read_all(self):
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            with self.lock:
                self.buf += chunk

    def poll(self):
        """(new output, exit code or None while running or output is still coming)."""
        code = None
        if not self.reader.is_alive():
            code = self.proc.wait()
        with self.lock:
            out, self.buf = bytes(self.buf), bytearray()
        return out, code

    def stop(self, grace):
        if getattr(self, "proc", None) is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self.proc.poll() is None:
                time.sleep(0.1)
            if self.proc.poll() is not None:
                return


def die_with_parent():
    """The rank's process gets SIGKILL if its Ray worker dies (PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


class Output:
    """Each rank's bytes, written as whole lines with the rank's prefix."""

    def __init__(self, prefixes):
        self.prefixes = prefixes
        self.partial = [b""] * len(prefixes)

    def add(self, rank, data, final=False):
        lines = (self.partial[rank] + data).split(b"\n")
        self.partial[rank] = lines.pop()
        if final and self.partial[rank]:
            lines.append(self.partial[rank])
            self.partial[rank] = b""
        out = sys.stdout.buffer
        for line in lines:
            out.write(self.prefixes[rank] + line + b"\n")
        out.flush()


def run_phase(what, actors, nodes, output, command, envs, workdir):
    """Runs `command` on every rank; returns None when all exit 0, else the failing exit code."""
    ray.get([a.start.remote(command, envs[i], workdir) for i, a in enumerate(actors)])
    running = set(range(len(actors)))
    while running:
        if stop_requested.is_set():
            say(f"stop requested: stopping the {what} of every rank")
            return stop_all(actors, 143)
        for i in sorted(running):
            try:
                data, code = ray.get(actors[i].poll.remote())
            except ray.exceptions.RayError as e:
                say(f"rank {i} on {nodes[i]} is gone ({type(e).__name__}): its node or Ray worker died; stopping the other ranks")
                return stop_all(actors, 1)
            output.add(i, data, final=code is not None)
            if code is None:
                continue
            running.discard(i)
            if code != 0:
                say(f"rank {i} on {nodes[i]}: {what} exited with code {code} (the first to fail); stopping the other ranks")
                return stop_all(actors, code)
        time.sleep(POLL_S)
    return None


def stop_all(actors, code):
    done = [a.stop.remote(STOP_GRACE_S) for a in actors]
    try:
        ray.get(done, timeout=STOP_GRACE_S + 10)
    except ray.exceptions.RayError:
        pass
    return code


def rank_env(spec, i, ips, master_port):
    """Rank i's variables, by what each holds (rayslurm's list); RAYSLURM_HEAD_IP stays the
    cluster's head, which the node's Ray already gives every job."""
    values = {
        "node_rank": str(i),
        "num_nodes": str(len(ips)),
        "node_ips": "\n".join(ips),
        "gpus_per_node": spec["gpus_per_node"],
        "master_addr": ips[0],
        "master_port": str(master_port),
        "rank": str(i),
        "world_size": str(len(ips)),
        "local_rank": "0",
        "unbuffered": "1",
    }
    return {name: values[kind] for name, kind in spec["variables"] if kind in values}


def main():
    spec = json.load(open(sys.argv[1]))
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
    ray.init(address="auto", log_to_driver=False)
    k = spec["nodes"]
    bundle = {"CPU": spec["cpus"]}
    if spec.get("gpus"):
        bundle["GPU"] = spec["gpus"]
    if spec.get("memory"):
        bundle["memory"] = spec["memory"]
    pg = placement_group([dict(bundle) for _ in range(k)], strategy="STRICT_SPREAD")
    say(f"waiting for {k} nodes with {bundle} each")
    while not stop_requested.is_set():
        ready, _ = ray.wait([pg.ready()], timeout=1)
        if ready:
            break
    if stop_requested.is_set():
        say("stop requested before the ranks started")
        return 143
    remote = ray.remote(Rank)
    actors = [
        remote.options(
            num_cpus=bundle["CPU"],
            num_gpus=bundle.get("GPU", 0),
            memory=bundle.get("memory"),
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=pg, placement_group_bundle_index=i
            ),
        ).remote()
        for i in range(k)
    ]
    places = ray.get([a.where.remote() for a in actors])
    ips = [p[0] for p in places]
    nodes = [p[1] for p in places]
    say("ranks on " + ", ".join(f"{i}: {n} ({ip})" for i, (ip, n, _) in enumerate(places)))
    envs = [rank_env(spec, i, ips, places[0][2]) for i in range(k)]
    prefixes = [f"[{i} {n}] ".encode() for i, n in enumerate(nodes)]
    output = Output(prefixes)
    code = None
    if spec.get("setup"):
        code = run_phase("setup", actors, nodes, output, spec["setup"], envs, spec["workdir"])
        if code is None:
            say("setup done on every rank")
    if code is None:
        code = run_phase("command", actors, nodes, output, spec["command"], envs, spec["workdir"])
    remove_placement_group(pg)
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
