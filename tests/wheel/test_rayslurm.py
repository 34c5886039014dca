"""Tests of the Python package inside the wheel, run against the installed wheel.

`bash tests/wheel/check.sh` runs them with a fresh venv's Python in which only the wheel is
installed (`python -m unittest`, nothing else needed). Slurm is faked by small scripts on
PATH: these tests check what the package does with rayslurm's answers, not Slurm itself.
"""

from __future__ import annotations

import json
import os
import stat
import sysconfig
import tempfile
import unittest
from pathlib import Path
from typing import Dict
from unittest import mock

import rayslurm
from rayslurm import RayslurmError


def write_script(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class Scratch(unittest.TestCase):
    """A temp directory for logs, an empty run store, and a directory of fake Slurm commands
    first on PATH; never the user's config or run records."""

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        self.logs = self.root / "logs"
        self.shims = self.root / "shims"
        for d in (self.logs, self.shims):
            d.mkdir()
        env: Dict[str, str] = {
            "PATH": f"{self.shims}{os.pathsep}{os.environ.get('PATH', '')}",
            "RAYSLURM_STATE_DIR": str(self.root / "state"),
            "RAYSLURM_CONFIG": "/dev/null",
        }
        patcher = mock.patch.dict(os.environ, env)
        patcher.start()
        self.addCleanup(patcher.stop)
        for name in list(os.environ):
            if name.startswith("RAYSLURM_") and name not in env:
                del os.environ[name]


# Read before `Scratch` removes the RAYSLURM_* variables: RAYSLURM_TEST_WHEEL=0 skips on
# purpose the tests that need the package installed from the wheel (the source tree's run,
# tests/it/python_package.rs); under CI (CI=true) they fail otherwise.
WHEEL_TESTS = os.environ.get("RAYSLURM_TEST_WHEEL")


class FindBin(Scratch):
    def test_finds_the_binary_the_wheel_installed_in_the_scripts_dir(self) -> None:
        if not (Path(sysconfig.get_path("scripts")) / "rayslurm").exists():
            why = "the package is not installed from the wheel here (a source tree on PYTHONPATH)"
            if WHEEL_TESTS == "0":
                self.skipTest(f"{why} (RAYSLURM_TEST_WHEEL=0)")
            if os.environ.get("CI") == "true":
                self.fail(f"CI=true but {why} (set RAYSLURM_TEST_WHEEL=0 to skip it on purpose)")
            self.skipTest(why)
        found = Path(rayslurm.find_bin())
        self.assertEqual(found.parent, Path(sysconfig.get_path("scripts")))
        self.assertTrue(os.access(found, os.X_OK))

    def test_falls_back_to_path(self) -> None:
        write_script(self.shims, "rayslurm", "echo fake")
        with mock.patch.object(rayslurm._cli, "_search_dirs", return_value=[self.root]):
            self.assertEqual(rayslurm.find_bin(), str(self.shims / "rayslurm"))

    def test_says_where_it_looked(self) -> None:
        with mock.patch.object(rayslurm._cli, "_search_dirs", return_value=[self.root]):
            with mock.patch.dict(os.environ, {"PATH": str(self.logs)}):
                with self.assertRaises(FileNotFoundError) as caught:
                    rayslurm.find_bin()
        self.assertIn(str(self.root), str(caught.exception))
        self.assertIn("PATH", str(caught.exception))


class Flags(unittest.TestCase):
    def test_keyword_arguments_become_flags(self) -> None:
        flags = rayslurm._cli.flags(
            {
                "exp_name": "x",
                "num_nodes": 3,
                "exclusive": True,
                "no_ray": False,
                "partition": None,
                "log_dir": Path("/shared/logs"),
                "env": ["A=1", "B=two words"],
                "sbatch_arg": ("--mail-type=END",),
                "ray_args": "--num-cpus 1",
            }
        )
        self.assertEqual(
            flags,
            [
                "--exp-name=x",
                "--num-nodes=3",
                "--exclusive",
                "--log-dir=/shared/logs",
                "--env=A=1",
                "--env=B=two words",
                "--sbatch-arg=--mail-type=END",
                "--ray-args=--num-cpus 1",
            ],
        )

    def test_a_mapping_gives_key_value_flags(self) -> None:
        self.assertEqual(
            rayslurm._cli.flags({"env": {"SEED": 1, "MODE": "fast"}}),
            ["--env=SEED=1", "--env=MODE=fast"],
        )

    def test_zero_is_a_value_not_false(self) -> None:
        self.assertEqual(rayslurm._cli.flags({"num_gpus": 0}), ["--num-gpus=0"])

    def test_values_that_are_not_text_are_refused(self) -> None:
        for bad in ({"env": [["A=1"]]}, {"env": [True]}, {"mem": object()}):
            with self.subTest(bad=bad), self.assertRaises(TypeError):
                rayslurm._cli.flags(bad)


class Launch(Scratch):
    def test_dry_run_returns_the_result(self) -> None:
        result = rayslurm.launch(
            exp_name="wheelcheck",
            command="python -c 'print(1)'",
            num_nodes=2,
            dry_run=True,
            log_dir=self.logs,
        )
        self.assertEqual(result.name, "wheelcheck")
        self.assertIsNone(result.job_id)
        self.assertFalse(result.submitted)
        # The script in the private directory; a dry run links no log (it writes the script
        # alone).
        script = result.script
        self.assertEqual(script.parent, self.root / "state" / "jobs")
        link = self.logs / result.log.name
        self.assertFalse(os.path.lexists(link))
        text = result.script_text
        self.assertEqual(text, script.read_text())
        self.assertIn("#SBATCH --nodes=2\n", text)
        self.assertIn("python -c ", text)
        self.assertEqual(result.log.suffix, ".log")

    def test_bad_input_raises_with_rayslurms_explanation(self) -> None:
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.launch(exp_name="a/b", command="true", dry_run=True, log_dir=self.logs)
        error = caught.exception
        self.assertEqual(error.returncode, 2)
        self.assertIn("invalid --exp-name `a/b`", error.stderr)
        self.assertIn("invalid --exp-name `a/b`", str(error))
        self.assertIn("--exp-name=a/b", str(error))
        self.assertEqual(list(self.logs.iterdir()), [], "nothing written")

    def test_an_unknown_parameter_is_a_type_error(self) -> None:
        with self.assertRaises(TypeError) as caught:
            rayslurm.launch(exp_name="x", command="true", dry_run=True, no_such_flag=1)
        self.assertIn("no_such_flag", str(caught.exception))

    def test_flags_that_would_change_the_output_are_not_parameters(self) -> None:
        for key in ("follow", "json", "quiet", "cancel_on_interrupt"):
            with self.subTest(key=key), self.assertRaises(TypeError):
                rayslurm.launch(exp_name="x", command="true", **{key: True})


class Secrets(Scratch):
    """``env`` values never reach an exception's text, its ``argv``, or a TypeError."""

    SECRET = "sk-live-0123456789"

    def test_a_failed_launch_masks_env_values(self) -> None:
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.launch(
                exp_name="a/b",
                command="true",
                dry_run=True,
                log_dir=self.logs,
                env={"API_KEY": self.SECRET, "SEED": 1},
            )
        error = caught.exception
        self.assertEqual(error.returncode, 2)
        self.assertIn("--env=API_KEY=***", str(error))
        self.assertIn("--env=SEED=***", str(error))
        for shown in (str(error), repr(error), " ".join(error.argv), error.stderr):
            self.assertNotIn(self.SECRET, shown)

    def test_masking_covers_both_spellings_and_repeated_text(self) -> None:
        argv = ["launch", "--env", f"API_KEY={self.SECRET}", f"--env=B={self.SECRET}x", "--env"]
        shown, secrets = rayslurm._cli._masked(argv)
        self.assertEqual(shown, ["launch", "--env", "API_KEY=***", "--env=B=***", "--env"])
        error = RayslurmError(argv, 1, f"sbatch said {self.SECRET}x and {self.SECRET}")
        self.assertNotIn(self.SECRET, str(error))
        self.assertIn("sbatch said *** and ***", str(error))
        self.assertEqual(sorted(secrets), sorted([self.SECRET, self.SECRET + "x"]))

    def test_an_env_item_without_equals_is_hidden_whole(self) -> None:
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.launch(exp_name="x", command="true", dry_run=True, env=[self.SECRET])
        error = caught.exception
        self.assertEqual(error.returncode, 2)
        self.assertIn("--env=***", str(error))
        self.assertNotIn(self.SECRET, str(error) + error.stderr)

    def test_a_bad_env_value_type_is_refused_without_the_value(self) -> None:
        with self.assertRaises(TypeError) as caught:
            rayslurm._cli.flags({"env": {"API_KEY": [self.SECRET]}})
        self.assertNotIn(self.SECRET, str(caught.exception))
        self.assertIn("API_KEY", str(caught.exception))

    def test_env_file_is_a_flag_like_any_other(self) -> None:
        secrets = self.root / "s.env"
        secrets.write_text(f"API_KEY={self.SECRET}\n")
        result = rayslurm.launch(
            exp_name="x", command="true", dry_run=True, log_dir=self.logs, env_file=secrets
        )
        self.assertIn(f"export API_KEY={self.SECRET}\n", result.script_text)


class StatusAndWait(Scratch):
    """A fake sbatch (job 4242), squeue (prints the state written to a file) and scontrol."""

    def setUp(self) -> None:
        super().setUp()
        self.state = self.shims / "state"
        self.state.write_text("RUNNING")
        write_script(self.shims, "sbatch", '[ "$1" = --parsable ] && echo 4242')
        # `%i|%T|%r|%M|%D`: without submit time and script the job is taken as the run's.
        write_script(self.shims, "squeue", f'echo "4242|$(cat {self.state})|None|0:05|1"')
        write_script(
            self.shims,
            "scontrol",
            "echo 'JobId=4242 JobState=COMPLETED Reason=None ExitCode=0:0 "
            "RunTime=00:00:07 NodeList=node1'",
        )

    def test_status_of_an_empty_store_is_empty(self) -> None:
        self.assertEqual(rayslurm.status(), [])

    def test_status_of_an_unknown_run_raises(self) -> None:
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.status("nope")
        self.assertEqual(caught.exception.returncode, 2)
        self.assertIn("no run matches", caught.exception.stderr)

    def test_launch_status_wait(self) -> None:
        run = rayslurm.launch(exp_name="w", command="true", log_dir=self.logs)
        self.assertEqual((run.job_id, run.submitted), ("4242", True))

        [record] = rayslurm.status(run)
        self.assertEqual((record["job_id"], record["state"]), ("4242", "RUNNING"))
        self.assertFalse(rayslurm.is_ended(record))
        self.assertEqual(rayslurm.status("w"), [record])
        with self.assertRaises(TimeoutError):
            rayslurm.wait(run, poll=0.05, timeout=0.2)

        self.state.write_text("COMPLETED")
        final = rayslurm.wait("w", poll=0.05, timeout=30)
        self.assertEqual((final["job_id"], final["state"]), ("4242", "COMPLETED"))
        self.assertEqual(final["exit_code"], 0)
        self.assertTrue(rayslurm.is_ended(final))

    def test_waiting_for_a_dry_run_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            rayslurm.wait({"job_id": None, "submitted": False})


class FakeBinary(Scratch):
    """A fake rayslurm in place of the wheel's: it logs its arguments, one a line, and prints
    the JSON (and exit code) a test gives it, so the package's side is tested alone."""

    def setUp(self) -> None:
        super().setUp()
        self.argv_log = self.root / "argv"
        self.answer = self.root / "answer.json"
        self.code = self.root / "code"
        self.code.write_text("0")
        write_script(
            self.root,
            "rayslurm",
            f'printf "%s\\n" "$@" > {self.argv_log}\n'
            f"env > {self.root / 'env'}\n"
            f"cat {self.answer}\n"
            'echo "said on stderr" >&2\n'
            f"exit $(cat {self.code})",
        )
        patcher = mock.patch.object(rayslurm._cli, "find_bin", return_value=str(self.root / "rayslurm"))
        patcher.start()
        self.addCleanup(patcher.stop)
        # What another test's fake said of its runs is not heard here.
        rayslurm._board.clear()
        self.addCleanup(rayslurm._board.clear)

    def argv(self) -> list:
        return self.argv_log.read_text().splitlines()

    def env(self) -> dict:
        """The environment the fake rayslurm was run with."""
        lines = (self.root / "env").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)


class Exec(FakeBinary):
    JOB = {
        "cluster": "sweep",
        "job": 3,
        "name": "trial-3",
        "submission_id": "rayslurm-555-3",
        "command": "python train.py",
        "workdir": "/work",
        "log": "/logs/sweep_555.d/jobs/3.log",
        "submitted_at": "2026-11-22T10:02:11+01:00",
    }

    def setUp(self) -> None:
        super().setUp()
        self.answer.write_text(json.dumps(self.JOB))

    def test_a_command_line_goes_as_command_and_the_job_comes_back(self) -> None:
        job = rayslurm.exec(
            "sweep",
            "python train.py --lr 0.1",
            name="trial-3",
            num_cpus=2,
            env={"LR": 0.1},
            secret={"HF_TOKEN": "hf-0123"},
        )
        self.assertEqual((job.cluster, job.job, job.name), ("sweep", 3, "trial-3"))
        self.assertEqual(job.log, Path(self.JOB["log"]))
        self.assertEqual(
            self.argv(),
            [
                "exec",
                "sweep",
                "--name=trial-3",
                "--num-cpus=2",
                "--env=LR",
                "--secret=HF_TOKEN",
                "-d",
                "--json",
                "--command=python train.py --lr 0.1",
            ],
        )
        # The values come in rayslurm's environment, never on its command line.
        self.assertEqual((self.env()["LR"], self.env()["HF_TOKEN"]), ("0.1", "hf-0123"))

    def test_a_list_of_words_goes_after_the_double_dash(self) -> None:
        rayslurm.exec("sweep", ["python", "train.py", "--lr", "0.1"], num_gpus=0.5)
        self.assertEqual(
            self.argv(),
            ["exec", "sweep", "--num-gpus=0.5", "-d", "--json"]
            + ["--", "python", "train.py", "--lr", "0.1"],
        )

    def test_flags_exec_sets_itself_are_refused(self) -> None:
        for key in ("json", "detach", "quiet", "args"):
            with self.subTest(key=key), self.assertRaises(TypeError):
                rayslurm.exec("sweep", "true", **{key: True})
        with self.assertRaises(ValueError):
            rayslurm.exec("sweep", [])
        self.assertFalse(self.argv_log.exists(), "nothing ran")

    def test_a_failure_raises_with_the_code_and_stderr(self) -> None:
        self.code.write_text("2")
        with self.assertRaises(RayslurmError) as caught:
            rayslurm.exec("sweep", "true")
        self.assertEqual(caught.exception.returncode, 2)
        self.assertIn("said on stderr", caught.exception.stderr)


class Queue(FakeBinary):
    CLUSTER = {
        "name": "sweep",
        "job_id": "555",
        "nodes": ["node1", "node2"],
        "cpus": 8.0,
        "cpus_free": 6.0,
        "gpus": 0.0,
        "gpus_free": 0.0,
        "time_left": "3:58:02",
        "jobs": [{"id": 3, "name": "trial-3", "status": "RUNNING"}],
    }

    def setUp(self) -> None:
        super().setUp()
        self.answer.write_text(json.dumps(self.CLUSTER))

    def test_queue_of_a_name_or_of_an_exec_result(self) -> None:
        self.assertEqual(rayslurm.queue("sweep"), self.CLUSTER)
        self.assertEqual(self.argv(), ["queue", "--json", "--", "sweep"])
        rayslurm.queue(Exec.JOB)
        self.assertEqual(self.argv(), ["queue", "--json", "--", "sweep"])
        with self.assertRaises(ValueError):
            rayslurm.queue({"job_id": "4242"})

    def test_an_answer_that_is_not_an_object_raises(self) -> None:
        self.answer.write_text("[]")
        with self.assertRaises(RayslurmError):
            rayslurm.queue("sweep")


class ClustersWithTheRealBinary(Scratch):
    """exec() and queue() of a cluster rayslurm does not know: the real binary's refusal."""

    def test_an_unknown_cluster_raises_with_exit_code_2(self) -> None:
        for call in (lambda: rayslurm.exec("nope", "true"), lambda: rayslurm.queue("nope")):
            with self.subTest(call=call), self.assertRaises(RayslurmError) as caught:
                call()
            self.assertEqual(caught.exception.returncode, 2)
            self.assertIn("no cluster named `nope`", caught.exception.stderr)


if __name__ == "__main__":
    unittest.main()
