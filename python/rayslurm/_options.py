"""The keyword parameters of :func:`~rayslurm.launch` and :func:`~rayslurm.up`, written once.

Each is a flag of the program by its long name (``num_nodes`` for ``--num-nodes``), in groups
that the two functions share or not. :func:`takes` gives a function the keyword-only
parameters of its groups, in their order, as its signature (what ``help()`` and
``inspect.signature`` show); the ``TypedDict`` of all its groups types its ``**options`` for
type checkers. A ``bool`` is ``False`` by default, everything else ``None``: a flag left out,
so that the program's default, its environment variables, config and task files apply.

src/cli/python_api.rs checks these against the program's own options (names, types, defaults).
"""

from __future__ import annotations

import collections.abc
import inspect
import os
import typing
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, TypedDict, TypeVar, Union

from ._cli import PathLike
from ._jobs import Job

#: ``{"KEY": value}`` or ``["KEY=VALUE", ...]``: one ``--env`` each.
Env = Union[Mapping[str, Any], Sequence[str]]
#: A path or a list of paths: one ``--env-file`` each.
EnvFiles = Union[PathLike, Sequence[PathLike]]


class LaunchRun(TypedDict, total=False):
    """What ``launch`` runs, when not its ``exp_name`` and ``command``."""

    task: Optional[PathLike]
    again: Optional[Union[str, int, Job]]


class UpIdle(TypedDict, total=False):
    """When ``up``'s cluster gives its allocation back."""

    idle_timeout: Optional[Union[str, int]]


class Resources(TypedDict, total=False):
    """What the job asks of Slurm, where its files go, its environment (both)."""

    partition: Optional[str]
    account: Optional[str]
    qos: Optional[str]
    time: Optional[Union[str, int]]
    sbatch_arg: Optional[Sequence[str]]
    log_dir: Optional[PathLike]
    template: Optional[PathLike]
    num_nodes: Optional[int]
    tasks_per_node: Optional[int]
    cpus_per_task: Optional[int]
    num_gpus: Optional[Union[int, str]]
    gpu_directive: Optional[str]
    mem: Optional[str]
    mem_per_cpu: Optional[str]
    node: Optional[str]
    constraint: Optional[str]
    exclusive: Optional[bool]
    load_env: Optional[str]
    env: Optional[Env]
    env_file: Optional[EnvFiles]
    secret: Optional[Env]
    setup: Optional[str]
    setup_timeout: Optional[int]


class Container(TypedDict, total=False):
    """The image every program of the run runs in (both)."""

    container_image: Optional[str]
    container_mounts: Optional[Union[str, Sequence[str]]]
    container_workdir: Optional[PathLike]
    container_runtime: Optional[str]


class Snapshot(TypedDict, total=False):
    """The code a run gets: a copy of its workdir made at submission (``launch``)."""

    snapshot: bool
    workdir: Optional[PathLike]
    empty_workdir: bool
    snapshot_max_size: Optional[Union[str, int]]


class FileMounts(TypedDict, total=False):
    """Local files copied at submission and placed at a path on every node, ``"DEST=SRC"``
    each (both; ``up``'s DEST is under ``~/``, in ``/tmp`` or a new absolute path)."""

    file_mount: Optional[Sequence[str]]


class NoRay(TypedDict, total=False):
    """A run without Ray (``launch``, the Executor)."""

    no_ray: bool


class PerNode(TypedDict, total=False):
    """The command on every node, not on the head alone (``launch``)."""

    per_node: bool
    no_prefix: bool


class Named(TypedDict, total=False):
    """The experiment name of the Executor's runs (``launch``'s first parameter)."""

    exp_name: Optional[str]


class Ray(TypedDict, total=False):
    """How Ray starts on the nodes (both)."""

    interface: Optional[str]
    ip_family: Optional[Union[str, int]]
    ready_timeout: Optional[int]
    stop_grace: Optional[int]
    port_base: Optional[int]
    min_nodes: Optional[int]
    object_store_memory: Optional[int]
    ray_args: Optional[str]
    ray_head_args: Optional[str]
    no_ray_auth: bool
    ray_metrics: bool


class LongRun(TypedDict, total=False):
    """Runs that outlive one allocation: signal, requeue, chains (``launch``)."""

    signal: Optional[str]
    requeue: bool
    max_requeues: Optional[int]
    restarts_on_error: Optional[int]
    after: Optional[Union[str, int, Job]]
    singleton: bool


class Arrays(TypedDict, total=False):
    """The job arrays of :meth:`~rayslurm.Executor.map_array` and ``batch()``: at most this
    many tasks at once (``--array 0-N%P``; submitit's ``slurm_array_parallelism``)."""

    array_parallelism: Optional[int]


class Elastic(TypedDict, total=False):
    """An elastic cluster, grown with worker jobs (``up``)."""

    max_nodes: Optional[int]
    worker_idle_timeout: Optional[int]
    max_pending_workers: Optional[int]
    replace_failed: bool
    worker_type: Optional[Sequence[str]]


class Detach(TypedDict, total=False):
    """``up`` returns once the allocation is submitted."""

    detach: bool


class DryRun(TypedDict, total=False):
    """Write the script and submit nothing, asking Slurm whether it would take it (both);
    ``check``: Slurm's refusal, or no answer, raises (exit 2); implies ``dry_run``."""

    dry_run: bool
    check: bool


LAUNCH = (
    LaunchRun,
    Resources,
    Container,
    Snapshot,
    FileMounts,
    NoRay,
    PerNode,
    Ray,
    LongRun,
    DryRun,
)
UP = (UpIdle, Resources, Container, FileMounts, Ray, Elastic, Detach, DryRun)
#: What an :class:`~rayslurm.Executor` takes: ``launch``'s options but those that say what
#: runs (the function does) and how its output is read (its result is).
EXECUTOR = (Named, Resources, Container, Snapshot, NoRay, Ray, LongRun, Arrays)


class LaunchOptions(
    LaunchRun,
    Resources,
    Container,
    Snapshot,
    FileMounts,
    NoRay,
    PerNode,
    Ray,
    LongRun,
    DryRun,
    total=False,
):
    """:func:`~rayslurm.launch`'s keyword parameters (its groups, :data:`LAUNCH`)."""


class ExecutorOptions(
    Named, Resources, Container, Snapshot, NoRay, Ray, LongRun, Arrays, total=False
):
    """:meth:`~rayslurm.Executor.update_parameters`'s keyword parameters (:data:`EXECUTOR`)."""


class UpOptions(
    UpIdle, Resources, Container, FileMounts, Ray, Elastic, Detach, DryRun, total=False
):
    """:func:`~rayslurm.up`'s keyword parameters (its groups, :data:`UP`)."""


F = TypeVar("F", bound=Callable[..., Any])


def takes(options: type, groups: Sequence[type]) -> Callable[[F], F]:
    """Gives a function ``f(positional..., **options)`` the keyword-only parameters of
    ``groups`` in their order as its signature; they must be those of ``options`` (the
    ``TypedDict`` that types its ``**options`` for type checkers)."""
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=False if hint == "bool" else None,
            annotation=hint,
        )
        for group in groups
        for name, hint in _annotations(group).items()
    ]
    names = {p.name for p in parameters}
    if len(names) != len(parameters) or names != set(_annotations(options)):
        raise TypeError(f"{options.__name__} is not made of {[g.__name__ for g in groups]}")

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        named = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        function.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=named + parameters
        )
        return function

    return decorate


def _annotations(typed_dict: type) -> Dict[str, Any]:
    """A ``TypedDict``'s keys and their annotations as written (``"Optional[str]"``), as the
    other functions of the package show theirs: unevaluated, since ``os.PathLike[str]`` is no
    expression before Python 3.9."""
    return {k: getattr(v, "__forward_arg__", v) for k, v in typed_dict.__annotations__.items()}


def given(function: Callable[..., Any], options: Mapping[str, Any]) -> Dict[str, Any]:
    """Every keyword-only parameter of ``function`` (made by :func:`takes`) in its order, with
    its value in ``options`` or its default; a keyword it does not take is a ``TypeError``, as
    Python's own."""
    parameters = inspect.signature(function).parameters
    for key, value in options.items():
        parameter = parameters.get(key)
        if parameter is None or parameter.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"{function.__name__}() got an unexpected keyword argument {key!r}")
        check(f"{function.__name__}()", key, value, parameter.annotation)
    return {
        name: options.get(name, parameter.default)
        for name, parameter in parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }


#: The secrets: a wrong value of these is named by its type, never shown.
_SECRET = frozenset({"env", "secret"})


def check(where: str, name: str, value: Any, annotation: Any) -> None:
    """Raises ``TypeError`` when ``value`` is not of the type ``annotation`` (as written in
    the groups above) says ``name`` takes: ``num_nodes="2"`` is refused, not passed on."""
    if not accepts(value, annotation):
        shown = f"(a {type(value).__name__}, not shown)" if name in _SECRET else repr(value)
        written = getattr(annotation, "__forward_arg__", annotation)
        raise TypeError(f"{where}: {name}={shown} is not {written}, the type {name} takes")


def _evaluated(hint: Any) -> Any:
    if isinstance(hint, typing.ForwardRef):
        hint = hint.__forward_arg__
    if isinstance(hint, str):
        names = {**vars(typing), **globals(), "os": os}
        try:
            hint = eval(hint, names)  # noqa: S307 - the package's own annotations, not input
        except TypeError:
            # Python 3.8: `os.PathLike[str]` is no expression yet.
            hint = eval(hint.replace("os.PathLike[str]", "os.PathLike"), names)  # noqa: S307
    return hint


def accepts(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the type ``hint``: the few kinds the options use (``None``,
    ``bool``, ``int`` (never a bool), ``float``, ``str``, a path, a list or tuple of them, a
    mapping, a class, and ``Union`` of these)."""
    hint = _evaluated(hint)
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin is Union:
        return any(accepts(value, arg) for arg in typing.get_args(hint))
    if hint is bool:
        return isinstance(value, bool)
    if hint in (int, float):
        return isinstance(value, (int, hint)) and not isinstance(value, bool)
    if origin is os.PathLike or hint is os.PathLike:
        return isinstance(value, os.PathLike)
    if origin is collections.abc.Sequence:
        (item,) = typing.get_args(hint) or (Any,)
        return isinstance(value, (list, tuple)) and all(accepts(v, item) for v in value)
    if origin is collections.abc.Mapping:
        return isinstance(value, collections.abc.Mapping)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True
