"""Unit tests of the package's objects and of how its parameters become rayslurm's flags.

Run by `bash tests/wheel/check.sh` against the installed wheel, and by
`cargo test --test it python_package` against the source tree (PYTHONPATH=python, the binary
under test on PATH). A fake rayslurm logs its arguments (see `FakeBinary`); the dry runs use
the real binary.
"""

from __future__ import annotations

import inspect
import json
import pydoc
import shlex
import signal
import time
import unittest
from pathlib import Path
from typing import List

import rayslurm
from rayslurm import Cluster, Job, RayslurmError
from test_rayslurm import FakeBinary, Scratch, write_script

LAUNCHED = {
    "job_id": "4242",
    "exp_name": "sweep",
    "script": "/state/jobs/sweep_1.sh",
    "log": "/state/jobs/sweep_1.log",
    "submitted": True,
}

SCALED = {
    "max_nodes": 8,
    "paused": None,
    "updated_at": "2026-11-25T19:02:00+00:00",
    "jobs": [
        {"job_id": "4242", "role": "head", "node": "node1", "state": "RUNNING",
         "since": "2026-11-25T18:55:00+00:00", "idle_s": None},
        {"job_id": "4243", "role": "worker", "node": "node2", "state": "RUNNING",
         "since": "2026-11-25T19:00:00+00:00", "idle_s": 12},
    ],
}

RECORD = {
    "exp_name": "sweep",
    "job_id": "4242",
    "state": "COMPLETED",
    "exit_code": 3,
    "script": "/state/jobs/sweep_1.sh",
    "log": "/state/jobs/sweep_1.log",
    "run_dir": "/state/jobs/sweep_1.d",
}


class Signatures(unittest.TestCase):
    def test_help_lists_every_parameter(self) -> None:
        text = pydoc.render_doc(rayslurm.launch)
        for name in ("exp_name", "command", "num_nodes", "exclusive", "env", "dry_run"):
            self.assertIn(name, text)
        for function in (rayslurm.launch, rayslurm.up, rayslurm.exec, rayslurm.cancel, rayslurm.scale):
            kinds = {p.kind for p in inspect.signature(function).parameters.values()}
            self.assertNotIn(inspect.Parameter.VAR_KEYWORD, kinds, function.__name__)

    def test_a_typo_is_a_type_error_before_anything_runs(self) -> None:
        for call in (
            lambda: rayslurm.launch("x", "true", num_node=2),
            lambda: rayslurm.up("c", idle_timout="1h"),
            lambda: rayslurm.up("c", max_node=8),
            lambda: rayslurm.scale("c", "+1", timout=5),
            lambda: rayslurm.exec("c", "true", num_cpu=1),
        ):
            with self.subTest(call=call), self.assertRaises(TypeError):
                call()


class Rendering(FakeBinary):
    """What each function passes to rayslurm, argument by argument."""

    def setUp(self) -> None:
        super().setUp()
        self.answer.write_text(json.dumps(LAUNCHED))

    def test_launch_flags_in_order_and_the_job(self) -> None:
        job = rayslurm.launch(
            "sweep",
            "python train.py",
            num_nodes=2,
            exclusive=False,
            env={"SEED": 1},
            sbatch_arg=["--mail-type=END"],
            no_ray=True,
            per_node=False,
        )
        self.assertEqual(
            self.argv(),
            [
                "launch",
                "--exp-name=sweep",
                "--command=python train.py",
                "--sbatch-arg=--mail-type=END",
                "--num-nodes=2",
                "--no-exclusive",
                "--env=SEED",
                "--no-ray",
                "--json",
            ],
        )
        # A value is never on rayslurm's command line (`ps` shows that to every user): it
        # comes in its environment, where `--env KEY` takes it from.
        self.assertEqual(self.env()["SEED"], "1")
        self.assertEqual(
            (job.name, job.job_id, job.submitted, job.log),
            ("sweep", "4242", True, Path(LAUNCHED["log"])),
        )

    def test_a_task_file_gpu_type_setup_timeout_and_snapshot(self) -> None:
        rayslurm.launch(
            task="train.yaml",
            num_gpus="a100:4",
            setup_timeout=3600,
            snapshot=True,
            workdir=Path("src"),
            snapshot_max_size="2G",
        )
        self.assertEqual(
            self.argv(),
            ["launch", "--num-gpus=a100:4", "--setup-timeout=3600", "--snapshot"]
            + ["--workdir=src", "--snapshot-max-size=2G", "--json", "train.yaml"],
        )
        # With a name and command too: the flags typed override the file's.
        rayslurm.launch("x", "true", task=Path("t.yaml"), num_gpus=2)
        self.assertEqual(
            self.argv(),
            ["launch", "--exp-name=x", "--command=true", "--num-gpus=2", "--json"]
            + ["t.yaml"],
        )

    def test_again_takes_a_job_an_id_or_a_name(self) -> None:
        for again, want in ((Job.from_launch(LAUNCHED), "4242"), (4242, "4242"), ("sweep", "sweep")):
            with self.subTest(again=again):
                job = rayslurm.launch(again=again)
                self.assertEqual(self.argv(), ["launch", f"--again={want}", "--json"])
                self.assertEqual(job.job_id, "4242")
        rayslurm.launch(again="sweep", dry_run=True)
        self.assertEqual(self.argv(), ["launch", "--again=sweep", "--dry-run", "--json"])

    def test_launch_without_a_command_task_or_again_is_a_type_error(self) -> None:
        for call in (
            lambda: rayslurm.launch(),
            lambda: rayslurm.launch("x"),
            lambda: rayslurm.launch(command="true"),
        ):
            with self.subTest(call=call), self.assertRaises(TypeError):
                call()
        self.assertFalse(self.argv_log.exists(), "nothing ran")

    def test_up_with_a_task_file_and_setup_timeout(self) -> None:
        self.answer.write_text(json.dumps({**LAUNCHED, "exp_name": "lab"}))
        rayslurm.up("lab", "cluster.yaml", setup_timeout=600, num_gpus="h100:8", detach=True)
        self.assertEqual(
            self.argv(),
            ["up", "--num-gpus=h100:8", "--setup-timeout=600", "--detach", "--json"]
            + ["--", "lab", "cluster.yaml"],
        )

    def test_exclusive_true_false_and_unset(self) -> None:
        for value, want in ((True, ["--exclusive"]), (False, ["--no-exclusive"]), (None, [])):
            with self.subTest(exclusive=value):
                rayslurm.launch("x", "true", exclusive=value)
                got = [a for a in self.argv() if "exclusive" in a]
                self.assertEqual(got, want)

    def test_a_list_command_is_one_quoted_command(self) -> None:
        rayslurm.launch("x", ["python", "-c", "print('a b')", "$HOME"])
        commands = [a for a in self.argv() if a.startswith("--command")]
        self.assertEqual(commands, ["--command=python -c 'print('\"'\"'a b'\"'\"')' '$HOME'"])
        for bad in ([], None, b"true"):
            with self.subTest(bad=bad), self.assertRaises((TypeError, ValueError)):
                rayslurm.launch("x", bad)  # type: ignore[arg-type]

    def test_host_goes_to_every_call_of_the_job_and_of_the_cluster(self) -> None:
        self.answer.write_text(json.dumps(LAUNCHED))
        job = rayslurm.launch("sweep", "true", host="alice@login")
        self.assertEqual(self.env().get("RAYSLURM_HOST"), "alice@login")
        self.assertEqual(job.host, "alice@login")
        self.assertNotIn("--host", " ".join(self.argv()), "a variable, not a flag")
        self.answer.write_text(json.dumps([RECORD]))
        self.assertEqual(job.state, "COMPLETED")
        self.assertEqual(self.env().get("RAYSLURM_HOST"), "alice@login", "the job's own")
        self.answer.write_text("log\n")
        list(job.logs(follow=True))
        self.assertEqual(self.env().get("RAYSLURM_HOST"), "alice@login", "a followed log")
        # A job of this machine's is asked here, the same id notwithstanding.
        here = rayslurm.Job("sweep", "4242")
        self.answer.write_text(json.dumps([{**RECORD, "state": "RUNNING"}]))
        self.assertEqual(here.state, "RUNNING")
        self.assertNotIn("RAYSLURM_HOST", self.env())
        self.answer.write_text(json.dumps({"cluster": "lab", "job": 1}))
        cluster = Cluster("lab", "77", host="login2")
        rayslurm.exec(cluster, "true")
        self.assertEqual(self.env().get("RAYSLURM_HOST"), "login2")
        with self.assertRaises(TypeError):
            rayslurm.status(host="")

    def test_job_methods_ask_for_the_job_by_its_id(self) -> None:
        job = Job.from_launch(LAUNCHED)
        self.answer.write_text("some\nlog\n")
        self.assertEqual(job.logs(tail=2), "some\nlog\n")
        self.assertEqual(self.argv(), ["logs", "--tail=2", "--", "4242"])
        job.cancel()
        self.assertEqual(self.argv(), ["cancel", "--", "4242"])
        job.cancel(signal="USR1")
        self.assertEqual(self.argv(), ["cancel", "--signal=USR1", "--", "4242"])
        job.cancel(signal=signal.SIGUSR2)
        self.assertEqual(self.argv(), ["cancel", "--signal=SIGUSR2", "--", "4242"])

    def test_state_exit_code_and_run_dir_come_from_status(self) -> None:
        self.answer.write_text(json.dumps([RECORD]))
        job = Job.from_name("sweep")
        self.assertEqual(self.argv(), ["status", "--json", "--", "sweep"])
        self.assertEqual((job.name, job.job_id), ("sweep", "4242"))
        self.assertEqual(job.state, "COMPLETED")
        self.assertEqual(self.argv(), ["status", "--json", "--all", "--", "4242"])
        self.assertEqual(job.exit_code, 3)
        self.assertEqual(job.run_dir, Path("/state/jobs/sweep_1.d"))
        self.assertTrue(job.done())
        self.assertEqual(job.wait(timeout=5)["exit_code"], 3)

    def test_follow_yields_lines_as_they_come_and_raises_on_failure(self) -> None:
        job = Job.from_launch(LAUNCHED)
        self.answer.write_text("one\ntwo\n")
        self.assertEqual(list(job.logs(follow=True)), ["one\n", "two\n"])
        self.assertEqual(self.argv(), ["logs", "--follow", "--", "4242"])
        # `logs -f` exits with the job's code: the log ends, the job's end is in its status.
        self.code.write_text("3")
        self.assertEqual(list(job.logs(follow=True)), ["one\n", "two\n"])
        # rayslurm's own error raises, after what was printed.
        write_script(self.root, "rayslurm", "echo partial; echo 'error: cannot read it' >&2; exit 1")
        lines = []
        with self.assertRaises(RayslurmError) as caught:
            for line in job.logs(follow=True):
                lines.append(line)
        self.assertEqual(lines, ["partial\n"])
        self.assertEqual(caught.exception.exit_code, 1)
        self.assertEqual(caught.exception.message, "error: cannot read it")

    def test_stopping_early_stops_the_program(self) -> None:
        flag = self.root / "terminated"
        write_script(
            self.root,
            "rayslurm",
            f"trap 'touch {flag}; exit 143' TERM\necho first\nwhile :; do sleep 0.1; done",
        )
        lines = Job.from_launch(LAUNCHED).logs(follow=True)
        self.assertEqual(next(lines), "first\n")
        lines.close()
        self.assertTrue(flag.exists(), "the program got SIGTERM")

    def test_a_dry_run_job_has_nothing_to_follow(self) -> None:
        job = Job.from_launch({**LAUNCHED, "job_id": None, "submitted": False})
        for call in (lambda: job.state, job.wait, job.cancel, job.logs):
            with self.subTest(call=call), self.assertRaises(ValueError):
                call()
        self.assertFalse(self.argv_log.exists(), "nothing ran")

    def test_exec_per_node_and_the_exec_job(self) -> None:
        self.answer.write_text(json.dumps({"cluster": "lab", "job": 3, "log": "/l/3.log"}))
        job = rayslurm.exec(
            "lab", ["python", "x.py"], per_node=True, num_nodes=2, setup="pip list"
        )
        self.assertEqual(
            self.argv(),
            ["exec", "lab", "--per-node", "--num-nodes=2", "--setup=pip list", "-d", "--json"]
            + ["--", "python", "x.py"],
        )
        self.assertEqual((job.cluster, job.job, job.per_node), ("lab", 3, True))
        job.cancel()
        self.assertEqual(self.argv(), ["cancel", "--", "lab", "3"])
        self.answer.write_text("out\n")
        self.assertEqual(job.logs(tail=1), "out\n")
        self.assertEqual(self.argv(), ["logs", "--tail=1", "--", "lab", "3"])
        self.answer.write_text(json.dumps({"jobs": [{"id": 3, "status": "FAILED", "exit_code": 4}]}))
        self.assertEqual((job.state, job.exit_code), ("FAILED", 4))
        self.assertEqual(job.wait(timeout=5)["status"], "FAILED")
        self.assertEqual(self.argv(), ["queue", "--json", "--", "lab"])

    def test_up_down_cancel_and_queue_of_a_cluster(self) -> None:
        self.answer.write_text(json.dumps({**LAUNCHED, "exp_name": "lab"}))
        cluster = rayslurm.up("lab", idle_timeout="30m", num_nodes=1, exclusive=False)
        self.assertEqual(
            self.argv(),
            ["up", "--idle-timeout=30m", "--num-nodes=1", "--no-exclusive", "--json"]
            + ["--", "lab"],
        )
        self.assertEqual((cluster.name, cluster.job_id), ("lab", "4242"))
        rayslurm.cancel(cluster, all_jobs=True)
        self.assertEqual(self.argv(), ["cancel", "--all", "--", "lab"])
        cluster.down()
        self.assertEqual(self.argv(), ["down", "--", "lab"])
        rayslurm.down("lab")
        self.assertEqual(self.argv(), ["down", "--", "lab"])

    def test_an_elastic_cluster_and_scale(self) -> None:
        self.answer.write_text(json.dumps({**LAUNCHED, "exp_name": "lab"}))
        cluster = rayslurm.up(
            "lab",
            num_nodes=1,
            max_nodes=8,
            worker_idle_timeout=600,
            max_pending_workers=1,
            replace_failed=True,
            detach=True,
        )
        self.assertEqual(
            self.argv(),
            ["up", "--num-nodes=1", "--max-nodes=8", "--worker-idle-timeout=600"]
            + ["--max-pending-workers=1", "--replace-failed", "--detach", "--json", "--", "lab"],
        )
        self.answer.write_text(json.dumps(SCALED))
        # `-1` after `--`: a change, never a flag.
        self.assertEqual(cluster.scale("-1"), SCALED)
        self.assertEqual(self.argv(), ["scale", "--json", "--", "lab", "-1"])
        self.assertEqual(rayslurm.scale("lab", "=4", timeout=60)["jobs"][1]["idle_s"], 12)
        self.assertEqual(self.argv(), ["scale", "--timeout=60", "--json", "--", "lab", "=4"])
        self.argv_log.unlink()
        with self.assertRaises(TypeError):
            rayslurm.scale(cluster, 2)  # type: ignore[arg-type]
        self.assertFalse(self.argv_log.exists(), "nothing ran")

    def test_an_error_carries_the_message_and_exit_code(self) -> None:
        self.code.write_text("2")
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.down("lab")
        self.assertEqual((caught.exception.exit_code, caught.exception.returncode), (2, 2))
        self.assertEqual(caught.exception.message, "said on stderr")


class ForwarderFake(FakeBinary):
    """A fake rayslurm that prints URLs, then forwards until Ctrl-C, which it notes."""

    def forwarding(self, ports: List[int]) -> Path:
        """The fake, printing a URL for each of ``ports``; the file it makes on SIGINT."""
        # A test run in the background inherits SIGINT ignored, which a shell cannot trap: the
        # fake gets it as a terminal's program would (a handled signal is reset at exec).
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        self.addCleanup(signal.signal, signal.SIGINT, previous)
        flag = self.root / "interrupted"
        write_script(
            self.root,
            "rayslurm",
            f'printf "%s\\n" "$@" > {self.argv_log}\n'
            f"trap 'touch {flag}; exit 0' INT\n"
            f"for p in {' '.join(map(str, ports))}; do echo http://localhost:$p; done\n"
            # `wait` (not a foreground sleep) lets the trap run as soon as SIGINT comes.
            "while :; do sleep 1 & wait $!; done",
        )
        return flag

    def assert_interrupted(self, flag: Path) -> None:
        deadline = time.monotonic() + 10
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(flag.exists(), "the program got SIGINT")


class DashboardWithAFake(ForwarderFake):
    def test_the_url_then_closed_by_ctrl_c(self) -> None:
        flag = self.forwarding([8265])
        with rayslurm.dashboard(Cluster("lab", "1"), port=8265) as board:
            self.assertEqual(board.url, "http://localhost:8265")
            self.assertEqual(self.argv(), ["dashboard", "--port=8265", "--", "lab"])
        self.assert_interrupted(flag)

    def test_a_refusal_raises(self) -> None:
        self.code.write_text("2")
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.dashboard("lab")
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertIn("said on stderr", caught.exception.message)


class ForwardWithAFake(ForwarderFake):
    def test_a_url_a_port_then_closed_by_ctrl_c(self) -> None:
        flag = self.forwarding([8080, 18081, 9000, 9001])
        with rayslurm.forward(Cluster("lab", "1"), [8080, "8081:18081", "9000-9001"]) as fwd:
            self.assertEqual(
                fwd.urls,
                [f"http://localhost:{p}" for p in (8080, 18081, 9000, 9001)],
            )
            self.assertEqual(
                self.argv(), ["forward", "--", "lab", "8080", "8081:18081", "9000-9001"]
            )
        self.assert_interrupted(flag)

    def test_a_refusal_raises_and_a_lone_port_is_no_list(self) -> None:
        self.code.write_text("2")
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.forward("web", ["http"])
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertIn("said on stderr", caught.exception.message)
        with self.assertRaises(TypeError):
            rayslurm.forward("web", 8080)  # type: ignore[arg-type]


class DryRunsWithTheRealBinary(Scratch):
    def test_exclusive_false_really_drops_the_directive(self) -> None:
        texts = {
            value: rayslurm.launch(
                "x", "true", exclusive=value, dry_run=True, log_dir=self.logs
            ).script_text
            for value in (True, False, None)
        }
        self.assertIn("#SBATCH --exclusive\n", texts[True])
        self.assertIn("#SBATCH --exclusive\n", texts[None])
        self.assertNotIn("--exclusive", texts[False])

    def test_a_list_command_reaches_the_script_quoted(self) -> None:
        job = rayslurm.launch(
            "x", ["printf", "%s|", "a b", "it's"], no_ray=True, dry_run=True, log_dir=self.logs
        )
        self.assertIsNone(job.job_id)
        [line] = [x for x in job.script_text.splitlines() if x.strip().startswith("--command ")]
        # The script quotes the command line once more for the bootstrap's argv.
        [_, command] = shlex.split(line)
        self.assertEqual(shlex.split(command), ["printf", "%s|", "a b", "it's"])

    def test_a_task_file_and_the_new_flags_reach_the_script(self) -> None:
        task = self.root / "train.yaml"
        task.write_text("name: tf\nnum_nodes: 2\nsetup: echo hi\nrun: echo run\n")
        # A count without a type: a type is looked up among the site's (docs/gpus.md).
        job = rayslurm.launch(
            task=task, num_gpus="4", setup_timeout=600, dry_run=True, log_dir=self.logs
        )
        self.assertEqual(job.name, "tf")
        for line in ("#SBATCH --nodes=2\n", "#SBATCH --gpus-per-task=4\n", "--setup-timeout 600"):
            self.assertIn(line, job.script_text)
        cluster = rayslurm.up("c2", task, setup_timeout=60, dry_run=True, log_dir=self.logs)
        self.assertIn("#SBATCH --nodes=2\n", cluster.script_text)
        self.assertIn("--setup-timeout 60", cluster.script_text)
        self.assertNotIn("echo run", cluster.script_text)

    def test_up_dry_run(self) -> None:
        cluster = rayslurm.up("c1", num_nodes=1, dry_run=True, log_dir=self.logs)
        self.assertFalse(cluster.submitted)
        self.assertIsNone(cluster.job_id)
        self.assertIn("#SBATCH --nodes=1\n", cluster.script_text)

    def test_an_elastic_clusters_options_reach_the_script_and_bad_ones_raise(self) -> None:
        cluster = rayslurm.up(
            "c3", max_nodes=4, worker_idle_timeout=60, dry_run=True, log_dir=self.logs
        )
        self.assertIn("--max-nodes 4", cluster.script_text)
        self.assertIn("--worker-idle-timeout 60", cluster.script_text)
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.up("c4", num_nodes=2, max_nodes=1, dry_run=True, log_dir=self.logs)
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertIn("--max-nodes 1 is less than --num-nodes 2", caught.exception.message)
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.scale("nope", "+1")
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertIn("no cluster named `nope`", caught.exception.message)

    def test_a_refused_value_raises_with_the_clis_words_and_writes_nothing(self) -> None:
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.launch("x", "true", time="soon", dry_run=True, log_dir=self.logs)
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertIn("soon", caught.exception.message)
        self.assertEqual(list(self.logs.iterdir()), [])


if __name__ == "__main__":
    unittest.main()
