"""The Python API against the real test cluster: each function and object, on real Slurm jobs
and a real Ray cluster. Run by `cargo test --test it e2e_python` (tests/it/e2e_python.rs), each
class as a test of its own, side by side. Each gets, under the e2e lock's rules: the binary
under test first on PATH, the source tree's package on PYTHONPATH, a run store of its own
(RAYSLURM_STATE_DIR), a working directory of its own on the shared filesystem, and
RAYSLURM_LAB_LOAD_ENV (the `--load-env` that puts the lab's Ray on PATH).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable
from unittest import mock

import rayslurm
from rayslurm import Job, RayslurmError

#: Jobs may queue behind other tests' jobs: this only catches one that never gets there.
PATIENCE = 600
LOAD_ENV = os.environ["RAYSLURM_LAB_LOAD_ENV"]
#: Small object stores, as the Rust e2e tests give their Ray nodes.
STORE = 100_000_000
HERE = Path.cwd()


def quietly(call: Callable[[], Any]) -> None:
    """A cleanup that must not hide the test's own failure."""
    try:
        call()
    except (RayslurmError, ValueError):
        pass


def wait_for_log(job: Any, needle: str) -> str:
    """Follows ``job``'s log until a line holds ``needle``; returns that line."""
    with contextlib.closing(job.logs(follow=True)) as lines:
        for line in lines:
            if needle in line:
                return line
    raise AssertionError(f"{job!r} ended without `{needle}` in its log:\n{job.logs()}")


class Runs(unittest.TestCase):
    def launch(self, name: str, command: Any, **options: Any) -> Job:
        job = rayslurm.launch(name, command, log_dir=HERE, time=10, **options)
        self.addCleanup(quietly, job.cancel)
        return job

    def test_a_no_ray_job_its_state_log_exit_code_and_run_dir(self) -> None:
        job = self.launch(
            "py-noray", ["bash", "-c", 'echo "hello from $SLURM_JOB_ID"; exit 3'], no_ray=True
        )
        self.assertTrue(job.submitted)
        self.assertRegex(job.job_id or "", r"^\d+$")
        self.assertIn(job.state.split()[0], {"PENDING", "RUNNING", "COMPLETING", "FAILED"})
        final = job.wait(timeout=PATIENCE, poll=1)
        self.assertEqual((final["state"], final["exit_code"]), ("FAILED", 3), final)
        self.assertEqual((job.state, job.exit_code), ("FAILED", 3))
        self.assertTrue(job.done())
        self.assertIn(f"hello from {job.job_id}\n", job.logs())
        self.assertEqual(job.logs(tail=1).count("\n"), 1)
        self.assertTrue(job.run_dir and job.run_dir.is_dir(), job.run_dir)
        # Found again by its name, as another process would.
        again = Job.from_name("py-noray")
        self.assertEqual((again.job_id, again.log), (job.job_id, job.log))
        [record] = rayslurm.status(job)
        self.assertEqual(record["exit_code"], 3)

    def test_follow_signal_and_cancel(self) -> None:
        job = self.launch(
            "py-cancel",
            "trap 'echo got usr1' USR1; echo started; while :; do sleep 1; done",
            no_ray=True,
        )
        wait_for_log(job, "started")
        self.assertEqual(job.state, "RUNNING")
        job.cancel(signal="USR1")
        wait_for_log(job, "got usr1")
        self.assertEqual(job.state, "RUNNING", "a signal does not end the run")
        job.cancel()
        final = job.wait(timeout=120, poll=1)
        self.assertIn(final["state"].split()[0], {"CANCELLED", "STOPPED"}, final)
        # Following an ended run's log gives it all and ends.
        self.assertIn("got usr1\n", "".join(job.logs(follow=True)))

    def test_a_small_ray_job(self) -> None:
        job = self.launch(
            "py-ray",
            ["python", "-c", "import ray; ray.init(); print('cpus', ray.cluster_resources()['CPU'])"],
            num_nodes=1,
            load_env=LOAD_ENV,
            object_store_memory=STORE,
        )
        final = job.wait(timeout=PATIENCE, poll=2)
        self.assertEqual((final["state"], final["exit_code"]), ("COMPLETED", 0), job.logs())
        self.assertRegex(job.logs(), r"(?m)^cpus \d")

    def test_bad_input_raises_with_exit_code_2_and_submits_nothing(self) -> None:
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.launch("py-bad", "true", partition="no-such-partition", log_dir=HERE)
        self.assertIn(caught.exception.exit_code, (1, 2))
        self.assertIn("no-such-partition", caught.exception.message)
        with self.assertRaises(RayslurmError) as caught:
            Job.from_name("py-bad")
        self.assertEqual(caught.exception.exit_code, 2)


class Functions(unittest.TestCase):
    """``Executor.submit``: a value from a 2-node Ray run, an exception with its remote
    traceback, a cancelled run's ``JobFailed``, side by side."""

    def test_a_value_from_two_nodes_an_exception_and_a_cancel(self) -> None:
        executor = rayslurm.Executor(
            HERE, num_nodes=2, exclusive=False, time=10, load_env=LOAD_ENV,
            object_store_memory=STORE,
        )
        # Defined in the test, so pickled by value: the nodes cannot import this module.
        def count_ray_nodes(per_node: int) -> int:
            """On how many nodes Ray ran tasks: ``per_node`` pinned to each live node."""
            import ray
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as On

            @ray.remote(num_cpus=0)
            def where() -> str:
                return str(ray.get_runtime_context().get_node_id())

            nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]] * per_node
            ran = [where.options(scheduling_strategy=On(n, soft=False)).remote() for n in nodes]
            return len(set(ray.get(ran)))

        counted = executor.submit(count_ray_nodes, 2)
        self.addCleanup(quietly, counted.cancel)

        def fails_deep(x: int) -> None:
            raise ArithmeticError(f"no luck with {x}")

        executor.update_parameters(num_nodes=1, no_ray=True)
        failed = executor.submit(fails_deep, 7)
        self.addCleanup(quietly, failed.cancel)

        def blocks() -> None:
            import time

            print("call started", flush=True)
            time.sleep(600)

        blocked = executor.submit(blocks)
        self.addCleanup(quietly, blocked.cancel)
        wait_for_log(blocked, "call started")
        self.assertEqual(blocked.state, "RUNNING")
        self.assertFalse(blocked.done())
        blocked.cancel()

        self.assertEqual(counted.result(timeout=PATIENCE, poll=2), 2, counted.logs())
        self.assertEqual((counted.state, counted.exit_code), ("COMPLETED", 0))
        result = counted.paths.result
        assert result is not None
        for private in (result.parent, result.parent.parent):
            self.assertEqual(private.stat().st_mode & 0o777, 0o700, private)
        with self.assertRaises(ArithmeticError) as caught:
            failed.result(timeout=PATIENCE, poll=2)
        self.assertEqual(str(caught.exception), "no luck with 7")
        remote = str(caught.exception.__cause__)
        self.assertIn("in fails_deep", remote)
        self.assertIn("ArithmeticError: no luck with 7", remote)
        self.assertRegex(remote, r"the traceback on node\d+")
        self.assertEqual(failed.state, "FAILED")
        error = blocked.exception(timeout=120, poll=2)
        self.assertIsInstance(error, rayslurm.JobFailed, error)
        assert isinstance(error, rayslurm.JobFailed)
        self.assertIn(error.state.split()[0], {"CANCELLED", "STOPPED"}, error)
        self.assertIn("call started", error.log_tail)
        cancelled = blocked.paths.result
        self.assertFalse(cancelled and cancelled.is_file(), "a cancelled call has no result")

    def test_the_local_mode_runs_the_call_here(self) -> None:
        local = rayslurm.Executor(cluster="local", num_nodes=2)
        self.assertEqual(local.submit(lambda x: x * 3, 14).result(), 42)
        with self.assertRaises(ZeroDivisionError):
            local.submit(lambda: 1 // 0).result()

        # A function that uses Ray, as it would on the cluster: here Ray starts in this process
        # (its own first remote call starts it), and is stopped after.
        def on_ray(n: int) -> int:
            import ray

            @ray.remote(num_cpus=0)
            def double(x: int) -> int:
                return 2 * x

            return sum(ray.get([double.remote(i) for i in range(n)]))

        import ray

        self.addCleanup(ray.shutdown)
        self.assertEqual(local.submit(on_ray, 4).result(), 12)


class ManyFunctions(unittest.TestCase):
    """The states of 10 runs, then ``as_completed`` over them: one ``squeue`` (and at most one
    ``sacct``) for all, a poll, counted by wrappers of both first on PATH."""

    def test_as_completed_over_ten_runs_asks_slurm_once_a_poll(self) -> None:
        executor = rayslurm.Executor(
            HERE, exclusive=False, time=10, no_ray=True, load_env=LOAD_ENV
        )
        jobs = [executor.submit(lambda i: i * i, i) for i in range(10)]
        for job in jobs:
            self.addCleanup(quietly, job.cancel)
        calls = HERE / "slurm-calls"
        shims = HERE / "slurm-shims"
        shims.mkdir(exist_ok=True)
        for name in ("squeue", "sacct"):
            real = shutil.which(name)
            assert real, f"no {name} on PATH"
            shim = shims / name
            shim.write_text(f'#!/bin/sh\necho {name} >> "{calls}"\nexec "{real}" "$@"\n')
            shim.chmod(0o755)
        polls = mock.patch.object(rayslurm._board, "records", wraps=rayslurm._board.records)
        path = {"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
        # Each job's state: one call for the 10, then none while it is fresh.
        with mock.patch.dict(os.environ, path):
            states = [j.state for j in jobs]
            self.assertEqual(calls.read_text().split().count("squeue"), 1, states)
            self.assertEqual({j.job_id: j.state for j in jobs}.keys(), {j.job_id for j in jobs})
            said = calls.read_text().split()
            self.assertLessEqual(said.count("squeue"), 2, said)
            self.assertLessEqual(said.count("sacct"), said.count("squeue"), said)
        calls.unlink()
        # The first poll asks for every run not yet known to have ended, in one call.
        open_runs = [j.job_id for j in jobs if not j.done()]
        started = time.monotonic()
        with polls as asked, mock.patch.dict(os.environ, path):
            done = list(rayslurm.as_completed(jobs, timeout=PATIENCE, poll=2))
        # A poll every 2 s, whatever the number of jobs: the calls the time allowed, at most.
        allowed = int((time.monotonic() - started) / 2) + 1
        self.assertEqual(sorted(j.job_id or "" for j in done), sorted(j.job_id or "" for j in jobs))
        said = calls.read_text().split() if calls.exists() else []
        self.assertGreaterEqual(asked.call_count, 1 if open_runs else 0)
        self.assertEqual(said.count("squeue"), asked.call_count, said)
        self.assertLessEqual(said.count("squeue"), allowed, said)
        self.assertLessEqual(said.count("sacct"), asked.call_count, said)
        if open_runs:
            self.assertEqual(asked.call_args_list[0].args[0], open_runs, "the first poll")
        # The ends were kept: the results ask Slurm nothing more.
        calls.unlink(missing_ok=True)
        with mock.patch.dict(os.environ, path):
            self.assertEqual([j.result() for j in jobs], [i * i for i in range(10)])
        self.assertFalse(calls.exists(), calls.read_text() if calls.exists() else "")


class Arrays(unittest.TestCase):
    """``map_array`` of 8 calls as one array, 2 tasks at once, results in order; a batch of
    2 different functions as another, one of its tasks cancelled alone."""

    def test_map_array_and_a_batch_each_one_array(self) -> None:
        executor = rayslurm.Executor(
            HERE, exclusive=False, time=10, no_ray=True, load_env=LOAD_ENV, array_parallelism=2
        )
        jobs = executor.map_array(lambda x, y: (x * y, os.environ["SLURM_ARRAY_TASK_ID"]),
                                  range(8), [10] * 8)
        for job in jobs:
            self.addCleanup(quietly, job.cancel)
        array = (jobs[0].job_id or "").split("_")[0]
        self.assertEqual([j.job_id for j in jobs], [f"{array}_{n}" for n in range(8)])

        def blocks() -> None:
            import time

            print("call started", flush=True)
            time.sleep(600)

        with executor.batch():
            blocked = executor.submit(blocks)
            word = executor.submit(str.upper, "done")
            with self.assertRaises(RuntimeError):
                blocked.job_id
        for job in (blocked, word):
            self.addCleanup(quietly, job.cancel)
        self.assertRegex(blocked.job_id or "", r"^\d+_0$")
        self.assertEqual(word.job_id, (blocked.job_id or "")[:-1] + "1")
        wait_for_log(blocked, "call started")
        blocked.cancel()

        done = rayslurm.wait_all([*jobs, word], timeout=PATIENCE, poll=1)
        self.assertEqual([j.result() for j in done[:8]], [(10 * n, str(n)) for n in range(8)])
        self.assertEqual([j.state for j in done], ["COMPLETED"] * 9)
        self.assertEqual(word.result(), "DONE")
        # Each task's outcome in its own private directory.
        results = {j.paths.result for j in jobs}
        self.assertEqual(len(results), 8, results)
        error = blocked.exception(timeout=120, poll=1)
        self.assertIsInstance(error, rayslurm.JobFailed, error)
        assert isinstance(error, rayslurm.JobFailed)
        self.assertIn(error.state.split()[0], {"CANCELLED", "STOPPED"}, error)


class Clusters(unittest.TestCase):
    def test_up_exec_queue_logs_cancel_dashboard_down(self) -> None:
        cluster = rayslurm.up(
            "py-lab", num_nodes=1, load_env=LOAD_ENV, object_store_memory=STORE, time=10
        )
        self.addCleanup(quietly, cluster.down)
        self.assertRegex(cluster.job_id or "", r"^\d+$")

        hello = rayslurm.exec(cluster, ["python", "-c", "print('hi from exec')"], name="hello")
        ranks = rayslurm.exec(
            "py-lab",
            'echo "rank $RANK of $WORLD_SIZE"',
            per_node=True,
            num_nodes=1,
            setup="echo setup ran",
        )
        self.assertEqual(hello.wait(timeout=PATIENCE, poll=1)["status"], "SUCCEEDED")
        self.assertEqual(hello.exit_code, 0)
        self.assertIn("hi from exec\n", hello.logs())
        self.assertEqual(ranks.wait(timeout=PATIENCE, poll=1)["status"], "SUCCEEDED", ranks.logs())
        self.assertIn("rank 0 of 1", ranks.logs())
        self.assertIn("setup ran", ranks.logs())

        # A function as a job of the cluster: its value in seconds, or its exception.
        def cpus(extra: int) -> int:
            import ray

            return int(ray.cluster_resources()["CPU"]) + extra

        def fails() -> None:
            raise LookupError("not on this cluster")

        started = time.monotonic()
        called = rayslurm.Cluster("py-lab").submit(cpus, 100)
        failed = cluster.submit(fails)
        self.assertGreater(called.result(timeout=PATIENCE), 100, called.logs())
        self.assertLess(time.monotonic() - started, 30, "a cluster's call returns in seconds")
        self.assertEqual(called.state, "SUCCEEDED")
        with self.assertRaises(LookupError) as caught:
            failed.result(timeout=PATIENCE)
        self.assertIn("in fails", str(caught.exception.__cause__))
        self.assertEqual(failed.state, "FAILED")

        # Calls on a cluster watched together: one `queue` for both, a poll.
        pair = [cluster.submit(cpus, n) for n in (1, 2)]
        polls = mock.patch.object(rayslurm._board, "queues", wraps=rayslurm._board.queues)
        asks = mock.patch.object(rayslurm._cli, "call_json", wraps=rayslurm._cli.call_json)
        with polls as polled, asks as asked:
            done = list(rayslurm.as_completed(pair, timeout=PATIENCE, poll=1))
        self.assertEqual(sorted(j.job for j in done), sorted(j.job for j in pair))
        queued = [c for c in asked.call_args_list if c.args[0][0] == "queue"]
        self.assertEqual(len(queued), polled.call_count, queued)
        cpus_here = called.result() - 100
        self.assertEqual([j.result() for j in pair], [cpus_here + 1, cpus_here + 2])

        sleeper = rayslurm.exec(cluster, "echo sleeping; sleep 300")
        wait_for_log(sleeper, "sleeping")
        self.assertEqual(sleeper.state, "RUNNING")
        sleeper.cancel()
        self.assertEqual(sleeper.wait(timeout=120, poll=1)["status"], "STOPPED")

        jobs = {j["id"]: j["status"] for j in cluster.queue()["jobs"]}
        self.assertEqual(jobs[hello.job], "SUCCEEDED")
        self.assertEqual(rayslurm.queue(hello)["name"], "py-lab")

        with rayslurm.dashboard(cluster) as board:
            self.assertRegex(board.url, r"^http://localhost:\d+$")
            try:
                with urllib.request.urlopen(board.url, timeout=30) as answer:
                    code = answer.status
            except urllib.error.HTTPError as refused:  # the token: an answer all the same
                code = refused.code
            self.assertLess(code, 500)

        cluster.down()
        final = Job.from_name("py-lab").wait(timeout=300, poll=1)
        self.assertTrue(rayslurm.is_ended(final), final)
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.exec(cluster, "true")
        self.assertEqual(caught.exception.exit_code, 2)


class Docs(unittest.TestCase):
    def test_every_python_example_of_docs_python_md_runs(self) -> None:
        page = Path(__file__).resolve().parents[2] / "docs" / "python.md"
        blocks = re.findall(r"(?ms)^```python\n(.*?)^```$", page.read_text())
        self.assertGreaterEqual(len(blocks), 10)
        # As a user's environment or rayslurm.toml would: Ray on the nodes, small stores.
        settings = {"RAYSLURM_LOAD_ENV": LOAD_ENV, "RAYSLURM_OBJECT_STORE_MEMORY": str(STORE)}
        namespace: dict = {}
        try:
            with mock.patch.dict(os.environ, settings):
                for number, block in enumerate(blocks, 1):
                    with self.subTest(block=number):
                        exec(compile(block, f"docs/python.md block {number}", "exec"), namespace)
        finally:
            # What a failed block left behind.
            for value in namespace.values():
                if isinstance(value, Job) and value.submitted:
                    quietly(value.cancel)
                elif isinstance(value, rayslurm.Cluster) and value.submitted:
                    quietly(value.down)


if __name__ == "__main__":
    unittest.main()
