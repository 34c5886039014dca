"""Unit tests of the Executor: its options, what ``submit`` hands to rayslurm, the call's runner
(``_call.py``, run here as the head would run it), and what ``result()`` makes of each outcome;
the local mode; ``as_completed`` asking once for all the jobs. Run as test_api.py is (the
wheel's venv, the source tree); submitting needs cloudpickle (or Ray) where they run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional
from unittest import mock

import rayslurm
from rayslurm import RayslurmError
from test_rayslurm import FakeBinary, write_script


def square(x: int) -> int:
    return x * x


def power(x: int, n: int) -> int:
    return int(x**n)


def negate(x: int) -> int:
    return -x


class Options(unittest.TestCase):
    def test_options_are_launchs_checked_when_given(self) -> None:
        executor = rayslurm.Executor("logs", num_nodes=2, time=30)
        self.assertEqual(executor.parameters, {"log_dir": "logs", "num_nodes": 2, "time": 30})
        executor.update_parameters(num_nodes=3, exclusive=False)
        self.assertEqual(executor.parameters["num_nodes"], 3)
        for bad, said in [
            ({"num_nodes": "2"}, "num_nodes='2' is not Optional[int]"),
            ({"num_nodes": True}, "num_nodes=True is not Optional[int]"),
            ({"time": 1.5}, "time=1.5 is not Optional[Union[str, int]]"),
            ({"sbatch_arg": ["--x", 3]}, "sbatch_arg=['--x', 3] is not Optional[Sequence[str]]"),
            ({"num_node": 2}, "unexpected keyword argument 'num_node'"),
            ({"per_node": True}, "unexpected keyword argument 'per_node'"),
            ({"command": "true"}, "unexpected keyword argument 'command'"),
        ]:
            with self.subTest(bad=bad), self.assertRaises(TypeError) as caught:
                executor.update_parameters(**bad)
            self.assertIn(said, str(caught.exception))
        # Nothing of a refused call was kept.
        self.assertEqual(executor.parameters["num_nodes"], 3)
        with self.assertRaises(TypeError):
            rayslurm.Executor(num_nodes="2")  # type: ignore[arg-type]

    def test_a_secrets_wrong_value_is_never_shown(self) -> None:
        with self.assertRaises(TypeError) as caught:
            rayslurm.Executor(secret=12345)  # type: ignore[arg-type]
        self.assertNotIn("12345", str(caught.exception))
        self.assertIn("secret=(a int, not shown)", str(caught.exception))

    def test_launch_refuses_a_wrong_type_too(self) -> None:
        with self.assertRaises(TypeError) as caught:
            rayslurm.launch("x", "true", num_nodes="2", dry_run=True)  # type: ignore[arg-type]
        self.assertIn("launch(): num_nodes='2'", str(caught.exception))


class Local(unittest.TestCase):
    def test_a_call_runs_here_with_the_same_interface(self) -> None:
        executor = rayslurm.Executor(cluster="local", num_nodes=2)

        def loud(x: int) -> int:
            print("squaring", x)
            return x * x

        job = executor.submit(loud, 7)
        self.assertEqual((job.result(), job.state, job.done()), (49, "COMPLETED", True))
        self.assertIsNone(job.exception())
        self.assertEqual(job.stdout(), "squaring 7\n")
        self.assertRegex(job.job_id or "", r"^local-\d+$")

        def boom() -> None:
            raise KeyError("missing")

        failed = executor.submit(boom)
        self.assertEqual(failed.state, "FAILED")
        with self.assertRaises(KeyError):
            failed.result()
        self.assertIsInstance(failed.exception(), KeyError)
        self.assertEqual(list(rayslurm.as_completed([job, failed])), [job, failed])

    def test_map_array_runs_each_call_here_in_turn(self) -> None:
        executor = rayslurm.Executor(cluster="local", array_parallelism=2)
        jobs = executor.map_array(power, [1, 2, 3], [3, 2])
        self.assertEqual([j.result() for j in jobs], [1, 4])
        self.assertEqual([j.state for j in jobs], ["COMPLETED"] * 2)

    def test_an_unknown_cluster_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            rayslurm.Executor(cluster="elsewhere")


class CallFake(FakeBinary):
    """A fake rayslurm that keeps a copy of the call (as ``launch`` does), and the runner run
    here on that copy, as the head runs it."""

    def setUp(self) -> None:
        super().setUp()
        self.copy = self.root / "mounted"
        self.run_dir = self.root / "run"
        self.run_dir.mkdir()
        # The fake launch copies the `--file-mount` source, which submit() removes after.
        script = (self.root / "rayslurm").read_text()
        copy = (
            'for a in "$@"; do case $a in --file-mount=*) '
            f'src=${{a#*=}}; src=${{src#*=}}; cp -r "$src" {self.copy};; esac; done\n'
        )
        write_script(self.root, "rayslurm", copy + script.split("\n", 1)[1])
        self.answer.write_text(json.dumps({"job_id": "77", "exp_name": "square", "log": "/l"}))

    def submit(self, *call: Any, **options: Any) -> rayslurm.FunctionJob[Any]:
        job = rayslurm.Executor(self.logs, no_ray=True, **options).submit(*call)
        self.answer.write_text(json.dumps([self.record("COMPLETED", 0)]))
        return job

    def record(self, state: str, code: Optional[int]) -> Dict[str, Any]:
        return {"job_id": "77", "exp_name": "square", "state": state, "exit_code": code,
                "run_dir": str(self.run_dir), "log": "/l", "script": "/s"}

    def run_call(self, env: Dict[str, str] = {}) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [sys.executable, str(self.copy / "_call.py")],
            # The nodes import the module of a function pickled by reference (this one's).
            env={**os.environ, "RAYSLURM_RUN_DIR": str(self.run_dir),
                 "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path]), **env},
            cwd=self.root,
            capture_output=True,
            text=True,
        )



class Submit(CallFake):
    """``Executor.submit``, and what ``result()`` makes of each outcome."""

    def test_the_call_goes_as_a_file_mount_and_its_value_comes_back(self) -> None:
        job = self.submit(square, 12)
        argv = self.argv()
        self.assertEqual(argv[0], "launch")
        self.assertIn("--exp-name=square", argv)
        self.assertIn("--command=python .rayslurm-call/_call.py", argv)
        self.assertIn("--no-ray", argv)
        self.assertTrue(any(a.startswith("--file-mount=.rayslurm-call=/") for a in argv), argv)
        self.assertEqual(argv[-1], "--json")
        self.assertEqual(sorted(p.name for p in self.copy.iterdir()),
                         ["_call.py", "call.pickle", "versions.json"])
        versions = json.loads((self.copy / "versions.json").read_text())
        self.assertEqual(versions["python"].split(".")[:2], list(map(str, sys.version_info[:2])))
        self.assertEqual(versions["chdir"], os.getcwd())
        self.assertEqual(self.run_call().returncode, 0)
        self.assertEqual((job.result(), job.state, job.exception()), (144, "COMPLETED", None))
        self.assertEqual(job.paths.result, self.run_dir / "rayslurm-call" / "result.pickle")

    def test_a_module_planted_in_the_submission_directory_shadows_nothing(self) -> None:
        job = self.submit(square, 5)
        shared = self.root / "shared"
        shared.mkdir()
        # Imported after the chdir, by the call's own module (this one).
        (shared / "rayslurm.py").write_text("raise SystemExit('planted module ran')\n")
        versions = json.loads((self.copy / "versions.json").read_text())
        (self.copy / "versions.json").write_text(json.dumps({**versions, "chdir": str(shared)}))
        ran = self.run_call()
        self.assertEqual(ran.returncode, 0, ran.stderr)
        self.assertEqual(job.result(), 25)

    def test_the_functions_exception_is_raised_with_its_remote_traceback(self) -> None:
        def deep(x: int) -> None:
            raise ValueError(f"bad value {x}")

        job = self.submit(deep, 5)
        self.assertEqual(self.run_call().returncode, 1)
        self.answer.write_text(json.dumps([self.record("FAILED", 1)]))
        with self.assertRaises(ValueError) as caught:
            job.result()
        self.assertEqual(str(caught.exception), "bad value 5")
        cause = str(caught.exception.__cause__)
        self.assertIn("in deep", cause)
        # Its frames: cloudpickle 3.1 names a function pickled by value `<dynamic-code>`.
        self.assertIn("ValueError: bad value 5", cause)
        self.assertIsInstance(job.exception(), ValueError)

    def test_an_exception_that_does_not_pickle_comes_as_a_remote_error(self) -> None:
        def unpicklable() -> None:
            import threading

            error = RuntimeError("with a lock")
            error.lock = threading.Lock()  # type: ignore[attr-defined]
            raise error

        job = self.submit(unpicklable)
        self.run_call()
        with self.assertRaises(rayslurm.RemoteError) as caught:
            job.result()
        self.assertIn("RuntimeError: with a lock", str(caught.exception))

    def test_a_call_the_nodes_cannot_load_names_both_versions(self) -> None:
        job = self.submit(square, 2)
        versions = json.loads((self.copy / "versions.json").read_text())
        versions.update(python="3.99.0", pickler_version="9.9.9")
        (self.copy / "versions.json").write_text(json.dumps(versions))
        (self.copy / "call.pickle").write_bytes(b"\x80\x05not a pickle")
        self.assertEqual(self.run_call().returncode, 1)
        self.answer.write_text(json.dumps([self.record("FAILED", 1)]))
        with self.assertRaises(rayslurm.CallLoadError) as caught:
            job.result()
        said = str(caught.exception)
        self.assertIn("Python 3.99.0", said)
        self.assertIn("9.9.9", said)
        here = ".".join(map(str, sys.version_info[:3]))
        self.assertIn(f"Python {here}", said)
        self.assertIn("UnpicklingError", said)

    def test_a_run_that_ends_without_a_result_raises_job_failed(self) -> None:
        job = self.submit(square, 2)
        self.answer.write_text(json.dumps([self.record("CANCELLED by 0", None)]))
        error = job.exception()
        self.assertIsInstance(error, rayslurm.JobFailed)
        assert isinstance(error, rayslurm.JobFailed)
        self.assertEqual((error.job_id, error.state), ("77", "CANCELLED by 0"))
        self.assertIn("without a result", str(error))

    def test_without_cloudpickle_the_error_says_what_to_install(self) -> None:
        missing = dict.fromkeys(["cloudpickle", "ray", "ray.cloudpickle"])
        with mock.patch.dict(sys.modules, missing), self.assertRaises(ImportError) as caught:
            rayslurm.Executor().submit(square, 1)
        self.assertIn("pip install cloudpickle", str(caught.exception))
        self.assertFalse(self.argv_log.exists(), "nothing was launched")


class Arrays(CallFake):
    """``map_array`` and ``batch()``: one ``launch --array``, a pickle a task, the runner run
    here as each task runs it (its own ``SLURM_ARRAY_TASK_ID`` and ``RAYSLURM_RUN_DIR``)."""

    def array(self, count: int) -> None:
        tasks = [{"task": n, "job_id": f"77_{n}", "log": f"/l_{n}"} for n in range(count)]
        self.answer.write_text(json.dumps(
            {"job_id": "77", "exp_name": "power", "log": "/l_%a", "script": "/s",
             "tasks": tasks}
        ))

    def run_tasks(self, count: int, state: str = "COMPLETED") -> List[int]:
        """Runs each task's call; the records the fake's `status` then prints (each task's)."""
        codes, records = [], []
        for n in range(count):
            run_dir = self.root / f"run_{n}"
            run_dir.mkdir()
            ran = self.run_call({"RAYSLURM_RUN_DIR": str(run_dir), "SLURM_ARRAY_TASK_ID": str(n)})
            codes.append(ran.returncode)
            records.append({**self.record(state, ran.returncode), "job_id": f"77_{n}",
                            "array_job": "77", "run_dir": str(run_dir)})
        self.answer.write_text(json.dumps(records))
        return codes

    def test_map_array_is_one_array_each_task_its_calls_result_in_order(self) -> None:
        self.array(3)
        executor = rayslurm.Executor(self.logs, no_ray=True, array_parallelism=2)
        jobs = executor.map_array(power, [1, 2, 3], [2, 3, 4, 5])
        argv = self.argv()
        self.assertEqual(argv[0], "launch")
        self.assertIn("--array=0-2%2", argv)
        self.assertIn("--exp-name=power", argv)
        self.assertFalse(any("parallelism" in a for a in argv), argv)
        self.assertEqual(sorted(p.name for p in self.copy.iterdir()),
                         ["_call.py", "call-0.pickle", "call-1.pickle", "call-2.pickle",
                          "versions.json"])
        self.assertEqual([j.job_id for j in jobs], ["77_0", "77_1", "77_2"])
        self.assertEqual([str(j.log) for j in jobs], ["/l_0", "/l_1", "/l_2"])
        self.assertEqual(self.run_tasks(3), [0, 0, 0])
        # All the tasks watched with one status call; each result from its own run directory.
        self.assertEqual(rayslurm.wait_all(jobs, poll=1), jobs)
        self.assertEqual(self.argv(), ["status", "--json", "--all", "--", "77_0", "77_1", "77_2"])
        self.assertEqual([j.result() for j in jobs], [1, 8, 81])
        self.assertEqual(jobs[2].paths.result, self.root / "run_2" / "rayslurm-call" / "result.pickle")
        # A task is cancelled alone.
        jobs[1].cancel()
        self.assertEqual(self.argv(), ["cancel", "--", "77_1"])

    def test_a_task_without_its_task_id_says_so(self) -> None:
        self.array(1)
        jobs = rayslurm.Executor(self.logs).map_array(square, [4])
        self.assertIn("--array=0", self.argv())
        ran = self.run_call()
        self.assertEqual(ran.returncode, 1)
        self.answer.write_text(json.dumps([{**self.record("FAILED", 1), "job_id": "77_0"}]))
        with self.assertRaises(rayslurm.CallLoadError) as caught:
            jobs[0].result()
        self.assertIn("SLURM_ARRAY_TASK_ID=''", str(caught.exception))

    def test_a_batch_is_one_array_submitted_at_the_blocks_end(self) -> None:
        self.array(2)
        executor = rayslurm.Executor(self.logs, no_ray=True)
        with executor.batch():
            first = executor.submit(square, 3)
            second = executor.submit(negate, x=4)
            with self.assertRaises(RuntimeError) as caught:
                first.job_id
            self.assertIn("end of its `with executor.batch():` block", str(caught.exception))
            with self.assertRaises(RuntimeError):
                first.result()
            self.assertFalse(self.argv_log.exists(), "nothing is submitted inside the block")
            with self.assertRaises(RuntimeError):
                executor.map_array(square, [1])
        argv = self.argv()
        self.assertIn("--array=0-1", argv)
        self.assertIn("--exp-name=batch", argv)
        self.assertEqual((first.job_id, second.job_id), ("77_0", "77_1"))
        self.assertEqual(self.run_tasks(2), [0, 0])
        self.assertEqual([j.result() for j in rayslurm.wait_all([first, second], poll=1)], [9, -4])

    def test_a_batch_that_raises_or_is_empty_submits_nothing(self) -> None:
        executor = rayslurm.Executor(self.logs)
        with self.assertRaises(KeyError), executor.batch():
            job = executor.submit(square, 3)
            raise KeyError("stop")
        with self.assertRaises(RuntimeError) as caught:
            job.job_id
        self.assertIn("block raised: nothing was submitted", str(caught.exception))
        with executor.batch():
            pass
        self.assertEqual(executor.map_array(square, []), [])
        with executor.batch(), self.assertRaises(RuntimeError):
            with executor.batch():
                pass
        self.assertFalse(self.argv_log.exists(), "nothing was launched")

    def test_array_parallelism_is_checked_when_given(self) -> None:
        with self.assertRaises(ValueError) as caught:
            rayslurm.Executor(array_parallelism=0)
        self.assertIn("array_parallelism=0", str(caught.exception))
        with self.assertRaises(TypeError):
            rayslurm.Executor(array_parallelism="2")  # type: ignore[arg-type]


class OnACluster(CallFake):
    """``Cluster.submit``: ``exec`` of the call's directory as a snapshot, the outcome beside
    the copy."""

    def test_the_call_goes_as_an_exec_snapshot_and_its_value_comes_back(self) -> None:
        copied = {"cluster": "lab", "job": 4, "name": "square", "command": "python _call.py",
                  "log": "/l/4.log", "workdir": os.getcwd(),
                  "snapshot": {"path": str(self.copy), "workdir": "/tmp/x", "files": 3,
                               "bytes": 10}}
        self.answer.write_text(json.dumps(copied))
        script = (self.root / "rayslurm").read_text().replace("--file-mount=*", "--workdir=*")
        write_script(self.root, "rayslurm", script.split("\n", 1)[1])
        job = rayslurm.Cluster("lab").submit(square, 9)
        argv = self.argv()
        self.assertEqual(argv[:2], ["exec", "lab"])
        self.assertIn("--snapshot", argv)
        self.assertIn("--command=python _call.py", argv)
        self.assertEqual(argv[-2:], ["-d", "--json"])
        self.assertTrue(json.loads((self.copy / "versions.json").read_text())["result_beside"])
        self.assertEqual(self.run_call().returncode, 0)
        self.assertEqual(job.paths.result, self.copy / "rayslurm-call" / "result.pickle")
        self.answer.write_text(json.dumps({"jobs": [{"id": 4, "status": "SUCCEEDED"}]}))
        self.assertEqual((job.result(), job.job_id), (81, "lab:4"))


class Watch(FakeBinary):
    def test_as_completed_asks_once_a_poll_for_every_job(self) -> None:
        jobs = [rayslurm.FunctionJob(f"j{i}", str(100 + i)) for i in range(3)]
        records: List[Dict[str, Any]] = [
            {"job_id": str(100 + i), "state": "COMPLETED", "exit_code": 0} for i in range(3)
        ]
        self.answer.write_text(json.dumps(records))
        self.assertEqual(list(rayslurm.as_completed(jobs, poll=1)), jobs)
        self.assertEqual(self.argv(), ["status", "--json", "--all", "--", "100", "101", "102"])
        # Their ends are kept: asking again asks nothing.
        self.argv_log.unlink()
        self.assertEqual([j.state for j in rayslurm.wait_all(jobs)], ["COMPLETED"] * 3)
        self.assertFalse(self.argv_log.exists())

    def test_the_states_of_many_runs_are_one_call_then_none_while_fresh(self) -> None:
        jobs = [rayslurm.Job(f"j{i}", str(200 + i)) for i in range(3)]
        running = [{"job_id": str(200 + i), "state": "RUNNING"} for i in range(3)]
        self.answer.write_text(json.dumps(running))
        with mock.patch.object(rayslurm._cli, "_run", wraps=rayslurm._cli._run) as run:
            self.assertEqual([j.state for j in jobs], ["RUNNING"] * 3)
            self.assertEqual([j.done() for j in jobs], [False] * 3)
            self.assertEqual(run.call_count, 1)
            self.assertEqual(self.argv(), ["status", "--json", "--all", "--", "200", "201", "202"])
            # Stale after FRESH seconds: one call again, for all.
            with mock.patch.object(rayslurm._board, "FRESH", 0.0):
                self.assertEqual(jobs[2].state, "RUNNING")
            self.assertEqual(run.call_count, 2)
            self.assertEqual(self.argv(), ["status", "--json", "--all", "--", "202", "200", "201"])
            # A run this process cancels is asked again at once.
            jobs[0].cancel()
            ended = [{**running[0], "state": "CANCELLED", "exit_code": None}]
            self.answer.write_text(json.dumps(ended))
            self.assertEqual(jobs[0].state, "CANCELLED")
            self.assertEqual(run.call_count, 4)
            # An ended run is not asked for again, even when stale.
            with mock.patch.object(rayslurm._board, "FRESH", 0.0):
                self.answer.write_text(json.dumps(running[1:]))
                self.assertEqual(jobs[1].state, "RUNNING")
                self.assertEqual(self.argv(), ["status", "--json", "--all", "--", "201", "202"])
                self.assertEqual(jobs[0].state, "CANCELLED")
            self.assertEqual(run.call_count, 5)

    def test_a_job_id_given_again_names_its_newest_run(self) -> None:
        job = rayslurm.Job("new", "70")
        # Newest first, as `status` prints them: an older run had the same id.
        self.answer.write_text(json.dumps([
            {"job_id": "70", "exp_name": "new", "state": "PENDING"},
            {"job_id": "70", "exp_name": "old", "state": "COMPLETED"},
        ]))
        self.assertEqual(job.state, "PENDING")

    def test_a_run_no_longer_recorded_does_not_hide_the_others(self) -> None:
        gone, kept = rayslurm.Job("gone", "300"), rayslurm.Job("kept", "301")
        self.code.write_text("2")
        self.answer.write_text("")
        with self.assertRaises(RayslurmError):
            gone.state
        # The fake refuses any call with 300 in it; asked alone, 301 answers.
        write_script(
            self.root,
            "rayslurm",
            f'printf "%s\\n" "$@" > {self.argv_log}\n'
            'case " $* " in *" 300 "*) echo "no run matches 300" >&2; exit 2;; esac\n'
            'echo \'[{"job_id": "301", "state": "RUNNING"}]\'\n',
        )
        self.assertEqual(kept.state, "RUNNING")
        self.assertEqual(self.argv(), ["status", "--json", "--all", "--", "301"])

    def test_a_clusters_jobs_are_one_queue_call_and_watched_with_runs(self) -> None:
        jobs = [rayslurm.ExecJob({"cluster": "lab", "job": n}) for n in (1, 2)]
        run_job = rayslurm.FunctionJob("f", "400")
        rows = {"jobs": [{"id": 1, "status": "RUNNING"}, {"id": 2, "status": "SUCCEEDED"}]}
        self.answer.write_text(json.dumps(rows))
        with mock.patch.object(rayslurm._cli, "_run", wraps=rayslurm._cli._run) as run:
            self.assertEqual([j.state for j in jobs], ["RUNNING", "SUCCEEDED"])
            self.assertEqual(run.call_count, 1)
            self.assertEqual(self.argv(), ["queue", "--json", "--", "lab"])
            # A job submitted since the last answer is asked for at once.
            late = rayslurm.ExecJob({"cluster": "lab", "job": 3})
            rows["jobs"].append({"id": 3, "status": "PENDING"})
            self.answer.write_text(json.dumps(rows))
            self.assertEqual(late.state, "PENDING")
            self.assertEqual(run.call_count, 2)
        # as_completed over both kinds: a status call and a queue call a poll. The fake says
        # the same to both: a list for status (the run), an object for queue... so two fakes.
        write_script(
            self.root,
            "rayslurm",
            f'printf "%s\\n" "$@" >> {self.argv_log}\n'
            'case "$1" in\n'
            '  status) echo \'[{"job_id": "400", "state": "COMPLETED", "exit_code": 0}]\';;\n'
            '  queue) echo \'{"jobs": [{"id": 1, "status": "STOPPED"}, {"id": 2, "status": "SUCCEEDED"}]}\';;\n'
            "esac\n",
        )
        self.argv_log.unlink()
        done = list(rayslurm.as_completed([*jobs, run_job], poll=1))
        self.assertEqual(done, [*jobs, run_job])
        said = self.argv()
        self.assertEqual((said.count("status"), said.count("queue")), (1, 1), said)

    def test_a_poll_shorter_than_a_second_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            list(rayslurm.as_completed([rayslurm.FunctionJob("j", "1")], poll=0.1))


if __name__ == "__main__":
    unittest.main()
