"""Running the rayslurm program: finding it, turning Python arguments into its flags, reading
its ``--json`` output, and its failures as :class:`RayslurmError`.

Everything else in the package goes through :func:`call` (one result) or :func:`stream`
(a followed log), so that the CLI stays the one contract: the package adds no behaviour of its
own to what the program does.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import shlex
import shutil
import signal as signals
import subprocess
import sysconfig
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple
from typing import TypeVar, Union, cast

_NAME = "rayslurm"

#: The variable rayslurm reads for ``--host``: the login node to run commands on, over SSH.
HOST_VARIABLE = "RAYSLURM_HOST"

_HOST: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar("host", default=None)


def current_host() -> Optional[str]:
    """The login node the calls in progress go to (``host=``), ``None`` for this machine or
    ``RAYSLURM_HOST`` (which rayslurm reads itself)."""
    return _HOST.get()


@contextlib.contextmanager
def on_host(host: Optional[str]) -> Iterator[None]:
    """Every call of rayslurm inside goes to ``host`` over SSH (``--host``); ``None`` changes
    nothing."""
    if host is None:
        yield
        return
    if not isinstance(host, str) or not host.strip():
        raise TypeError(f"host must be a login node's name ('[user@]host'), not {host!r}")
    token = _HOST.set(host)
    try:
        yield
    finally:
        _HOST.reset(token)


def host_for(host: Optional[str], target: Any) -> Optional[str]:
    """``host`` when given (checked by :func:`on_host`), else the login node of ``target``
    when it is an object that knows one."""
    return host if host is not None else getattr(target, "host", None)


F = TypeVar("F", bound=Callable[..., Any])


def hosted(method: F) -> F:
    """A method of an object that remembers its login node (``self.host``): its calls of
    rayslurm go there."""

    @functools.wraps(method)
    def on_its_host(self: Any, *args: Any, **kwargs: Any) -> Any:
        with on_host(getattr(self, "host", None)):
            return method(self, *args, **kwargs)

    return cast(F, on_its_host)

#: States after which a run will not change any more, as ``status`` reports them: Slurm's
#: final job states, ``STOPPED`` (scancel, time limit or SIGTERM, from the run's final state
#: file) and ``ENDED`` (the job left Slurm and nothing said how). ``UNKNOWN`` (Slurm could
#: not be asked) and ``COMPLETING`` are not final.
ENDED_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "ENDED",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "STOPPED",
        "TIMEOUT",
    }
)

#: Flags whose ``False`` is a flag of its own: ``exclusive=False`` is ``--no-exclusive``
#: (leaving it out would keep the default, exclusive).
_NEGATED = {"exclusive": "--no-exclusive"}

#: The flags whose ``KEY=VALUE`` values are masked wherever the package shows a command line.
_SECRET_FLAGS = ("--env", "--secret")

Command = Union[str, Sequence[str]]
PathLike = Union[str, "os.PathLike[str]"]


class RayslurmError(RuntimeError):
    """The rayslurm program failed: it exited with a non-zero code or printed no JSON.

    ``returncode`` (also ``exit_code``) is 2 for input rayslurm refused before submitting
    anything, 1 for a failure of Slurm or of the job. ``stderr`` holds rayslurm's own
    explanation (``error: ...``, then its hint), ``message`` the same without surrounding blanks.

    ``env`` values are secrets (API keys, tokens): ``argv`` shows them as ``KEY=***``, and
    any that ``stderr`` or ``stdout`` repeats is replaced by ``***`` too, so that neither the
    message nor a log of the exception ever holds one.
    """

    def __init__(
        self, argv: Sequence[str], returncode: int, stderr: str, stdout: str = ""
    ) -> None:
        self.argv, secrets = _masked(argv)
        self.returncode = returncode
        self.stderr = _without(stderr, secrets)
        self.stdout = _without(stdout, secrets)
        said = self.stderr.strip() or "(nothing on stderr)"
        super().__init__(f"`{shlex.join(self.argv)}` exited with code {returncode}:\n{said}")

    @property
    def exit_code(self) -> int:
        """The program's exit code (the same as ``returncode``)."""
        return self.returncode

    @property
    def message(self) -> str:
        """What rayslurm said on stderr, without surrounding blank space."""
        return self.stderr.strip()


def _masked(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """``argv`` with every ``--env KEY=VALUE`` (or ``--env=KEY=VALUE``) as ``KEY=***``, and
    the values masked."""
    shown: List[str] = []
    secrets: List[str] = []
    after_flag = False
    for arg in map(str, argv):
        flag, eq, rest = arg.partition("=")
        if after_flag or (eq and flag in _SECRET_FLAGS):
            pair = arg if after_flag else rest
            key, has_value, value = pair.partition("=")
            if has_value:
                if value:
                    secrets.append(value)
                pair = f"{key}=***"
            elif pair:
                # No `=`: which part is the value cannot be told, so all of it is hidden.
                secrets.append(pair)
                pair = "***"
            arg = pair if after_flag else f"{flag}={pair}"
        shown.append(arg)
        after_flag = arg in _SECRET_FLAGS
    return shown, secrets


def _without(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***`` (longest first)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _search_dirs() -> List[Path]:
    """Where an installed wheel puts the binary, most specific first."""
    package = Path(__file__).resolve().parent
    dirs = [
        package,
        # pip install --target DIR: the package is DIR/rayslurm, the binary DIR/bin/rayslurm.
        package.parent / "bin",
    ]
    scripts = [sysconfig.get_path("scripts")]
    try:
        scripts.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    dirs.extend(Path(d) for d in scripts if d)
    return dirs


def find_bin() -> str:
    """Returns the path of the rayslurm binary.

    Looks beside this package, in the scripts directory of the interpreter's installation
    (a venv's ``bin``, then the user's ``~/.local/bin``), then on ``PATH``.

    Raises:
        FileNotFoundError: no executable rayslurm was found in any of those places.
    """
    dirs = _search_dirs()
    for directory in dirs:
        candidate = directory / _NAME
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which(_NAME)
    if on_path:
        return on_path
    looked = ", ".join(str(d) for d in dirs)
    raise FileNotFoundError(
        f"the rayslurm binary was not found (looked in {looked} and on PATH); "
        "reinstall the rayslurm wheel or put a rayslurm binary on PATH"
    )


def _flag_value(key: str, value: Any, shown: bool = True) -> str:
    if isinstance(value, (str, int, float, os.PathLike)) and not isinstance(value, bool):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    what = f"{value!r}" if shown else f"a {type(value).__name__}"
    raise TypeError(f"{key}={what}: a flag value must be a str, a number or a path")


def flags(options: Mapping[str, Any]) -> List[str]:
    """Turns keyword arguments into flags, in their order: ``exp_name="x"`` -> ``--exp-name=x``.

    ``True`` gives the bare flag; ``False`` the negated flag where there is one
    (``exclusive=False`` -> ``--no-exclusive``), else nothing; ``None`` nothing; a list or tuple
    the flag once per item; a mapping the flag once per ``KEY=VALUE`` (for ``env``). Values are
    joined with ``=``, so a value that starts with ``-`` is never read as another flag.
    """
    out: List[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            continue
        if value is False:
            if key in _NEGATED:
                out.append(_NEGATED[key])
        elif value is True:
            out.append(flag)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                # `env` values are secrets: an error names the key, never the value.
                out.append(f"{flag}={k}={_flag_value(f'{key}[{k!r}]', v, shown=False)}")
        elif isinstance(value, (list, tuple)):
            out.extend(f"{flag}={_flag_value(key, item)}" for item in value)
        else:
            out.append(f"{flag}={_flag_value(key, value)}")
    return out


def command_line(command: Command, where: str) -> str:
    """A command as one shell line: a str as it is, a list of words each quoted (``shlex``)."""
    if isinstance(command, str):
        return command
    words = command_words(command, where)
    return shlex.join(words)


def command_words(command: Sequence[str], where: str) -> List[str]:
    """A list command's words, checked: text, numbers or paths, and at least one."""
    if isinstance(command, (bytes, Mapping)) or not isinstance(command, Sequence):
        raise TypeError(f"{where}: command must be a str or a list of words, not {command!r}")
    words = [_flag_value("command", w) for w in command]
    if not words:
        raise ValueError(f"{where}: the command has no words")
    return words


def signal_name(signal: Optional[Union[str, int]]) -> Optional[str]:
    """A signal for ``--signal``: a name as it is (``"USR1"``), a number or a
    ``signal.Signals`` by its name (``SIGUSR1``)."""
    if isinstance(signal, int) and not isinstance(signal, bool):
        return signals.Signals(signal).name
    return None if signal is None else str(signal)


def _values_in_env(args: Sequence[str]) -> Tuple[List[str], Dict[str, str]]:
    """``args`` with each ``--env=KEY=VALUE`` and ``--secret=KEY=VALUE`` given as ``--env=KEY``
    and ``--secret=KEY``, and the values in the environment of the program, which takes a
    key's value from there: a value on its command line would be seen by every user (``ps``).
    """
    env = dict(os.environ)
    host = _HOST.get()
    if host is not None:
        env[HOST_VARIABLE] = host
    out: List[str] = []
    for arg in args:
        flag, _, pair = arg.partition("=")
        key, eq, value = pair.partition("=")
        if flag in _SECRET_FLAGS and eq and key:
            env[key] = value
            out.append(f"{flag}={key}")
        else:
            out.append(arg)
    return out, env


def call_bytes(args: Sequence[str]) -> Optional[bytes]:
    """Runs ``rayslurm ARGS`` and returns its stdout as bytes; ``None`` when it exits 1 (what
    it was asked for is not there). Any other failure raises :class:`RayslurmError`."""
    given, env = _values_in_env(args)
    binary = find_bin()
    proc = subprocess.run(
        [binary, *given], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    if proc.returncode == 1:
        return None
    if proc.returncode != 0:
        said = proc.stderr.decode(errors="replace")
        raise RayslurmError([binary, *args], proc.returncode, said)
    return proc.stdout


def environment() -> Dict[str, str]:
    """The environment rayslurm runs in: this one, with ``RAYSLURM_HOST`` for ``host=``."""
    return _values_in_env([])[1]


def _run(args: Sequence[str]) -> "subprocess.CompletedProcess[str]":
    given, env = _values_in_env(args)
    binary = find_bin()
    proc = subprocess.run(
        [binary, *given],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=False,
    )
    # The call as asked, values included, so that an error masks any it repeats.
    proc.args = [binary, *args]
    return proc


def parsed(proc: "subprocess.CompletedProcess[str]") -> Any:
    """The JSON a successful run printed."""
    if proc.returncode != 0:
        raise RayslurmError(proc.args, proc.returncode, proc.stderr, proc.stdout)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        said = f"printed no JSON: {proc.stdout!r}\n{proc.stderr}"
        raise RayslurmError(proc.args, proc.returncode, said, proc.stdout) from None


def call_json(args: Sequence[str], kind: type) -> Any:
    """Runs ``rayslurm ARGS`` and returns its JSON, which must be a ``kind`` (dict or list)."""
    result = parsed(_run(args))
    if not isinstance(result, kind):
        raise RayslurmError(args, 0, f"printed JSON that is not a {kind.__name__}: {result!r}")
    return result


def call_text(args: Sequence[str]) -> str:
    """Runs ``rayslurm ARGS`` and returns what it printed on stdout."""
    proc = _run(args)
    if proc.returncode != 0:
        raise RayslurmError(proc.args, proc.returncode, proc.stderr, proc.stdout)
    return proc.stdout


def stream(args: Sequence[str]) -> Iterator[str]:
    """Runs ``rayslurm ARGS`` and yields its stdout line by line as it comes (``logs -f``).

    ``logs -f`` exits with the followed job's own exit code: that is no error of rayslurm's
    (the job's end is in its status). Only an exit where rayslurm said ``error: ...`` raises
    :class:`RayslurmError`, at the end. Closing the iterator early stops the program.
    """
    # Read now (a generator's body runs when iterated, maybe outside ``on_host``).
    given, env = _values_in_env(args)
    return _streamed([find_bin(), *args], given, env)


def _streamed(argv: List[str], given: List[str], env: Dict[str, str]) -> Iterator[str]:
    proc = subprocess.Popen(
        [argv[0], *given],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    ended = False
    try:
        assert proc.stdout is not None
        yield from proc.stdout
        ended = True
    finally:
        if not ended and proc.poll() is None:
            proc.terminate()
        stderr = proc.stderr.read() if proc.stderr else ""
        code = proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
    if code != 0 and any(line.startswith("error:") for line in stderr.splitlines()):
        raise RayslurmError(argv, code, stderr)


def status_records(target: Optional[str], all_runs: bool) -> "subprocess.CompletedProcess[str]":
    """``rayslurm status --json [--all] [-- TARGET]``, not yet checked."""
    args = ["status", "--json"]
    if all_runs:
        args.append("--all")
    if target is not None:
        args += ["--", target]
    return _run(args)


def status_of(targets: Sequence[str]) -> "subprocess.CompletedProcess[str]":
    """``rayslurm status --json --all -- TARGET...``: several runs in one call, not yet
    checked (``--all``: none left out for being old)."""
    return _run(["status", "--json", "--all", "--", *targets])


def is_ended(run: Mapping[str, Any]) -> bool:
    """Whether a :func:`status` record's state is final (see :data:`ENDED_STATES`)."""
    words = str(run.get("state") or "").split()
    return bool(words) and words[0].rstrip("+").upper() in ENDED_STATES


def logs_args(target: str, job: Optional[int], tail: Optional[int], follow: bool) -> List[str]:
    """``rayslurm logs`` for a run, or for one job of a cluster."""
    args = ["logs", *flags({"tail": tail, "follow": follow}), "--", target]
    if job is not None:
        args.append(str(job))
    return args


def scale(
    cluster: str, change: str, timeout: Optional[int], worker_type: Optional[str] = None
) -> Dict[str, Any]:
    """``rayslurm scale --json -- CLUSTER CHANGE``: the cluster's jobs once its head took it."""
    if not isinstance(change, str):
        raise TypeError(
            f"a change of size is a str, '+N' (add), '-N' (remove) or '=N' (in all), not {change!r}"
        )
    given = {"timeout": timeout, "worker_type": worker_type}
    args = ["scale", *flags(given), "--json", "--", cluster, change]
    result: Dict[str, Any] = call_json(args, dict)
    return result
