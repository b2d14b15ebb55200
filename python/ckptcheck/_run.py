"""Running ckptcheck and reading its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

from ._binary import binary

PathLike = Union[str, "os.PathLike[str]"]


class Error(Exception):
    """ckptcheck could not do its job (exit status 2): the message is the tool's."""

    def __init__(self, message: str, *, exit_code: int = 2, argv: Sequence[str] = (), stderr: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.argv = list(argv)
        self.stderr = stderr


@dataclass(frozen=True)
class Finding:
    """One finding of a report, as the JSON report has it."""

    code: str
    severity: str
    message: str
    key: str = ""
    side: str = ""
    file: str = ""
    physical: str = ""
    keys: List[str] = field(default_factory=list)
    published: Any = None
    exported: Any = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Finding":
        return cls(
            code=d.get("code", ""),
            severity=d.get("severity", ""),
            message=d.get("message", ""),
            key=d.get("key", ""),
            side=d.get("side", ""),
            file=d.get("file", ""),
            physical=d.get("physical", ""),
            keys=list(d.get("keys") or []),
            published=d.get("published"),
            exported=d.get("exported"),
            raw=d,
        )


@dataclass(frozen=True)
class Report:
    """A ckptcheck report (schema ``ckptcheck.report/v1``).

    ``ok`` is the verdict: no finding at or above ``--fail-on`` (``exit_code``
    0; 1 otherwise). ``summary`` counts findings per severity; ``raw`` is the
    whole JSON report and ``json`` its text.
    """

    ok: bool
    exit_code: int
    command: str
    findings: List[Finding]
    summary: Dict[str, int]
    raw: Dict[str, Any] = field(repr=False)
    json: str = field(repr=False, default="")
    stderr: str = field(repr=False, default="")

    def errors(self) -> List[Finding]:
        """The findings of severity error."""
        return [f for f in self.findings if f.severity == "error"]


def _paths(paths: Sequence[PathLike]) -> List[str]:
    return [os.fspath(p) for p in paths]


def run(
    command: str,
    paths: Sequence[PathLike],
    args: Sequence[str] = (),
    *,
    use_config: bool = False,
    timeout: Optional[float] = None,
) -> Report:
    """Run ``ckptcheck COMMAND --format json [--no-config] ARGS -- PATHS``.

    Returns the report for exit status 0 or 1; raises :class:`Error` for
    exit status 2, or when the output is not a report.
    """
    argv = [binary(), command, "--format", "json"]
    if not use_config:
        argv.append("--no-config")
    argv += [str(a) for a in args]
    argv.append("--")
    argv += _paths(paths)
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False)
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode not in (0, 1):
        message = stderr.strip() or f"ckptcheck exited with status {proc.returncode}"
        raise Error(message, exit_code=proc.returncode, argv=argv, stderr=stderr)
    try:
        raw = json.loads(stdout)
    except ValueError as e:
        raise Error(f"ckptcheck {command}: not a JSON report ({e}): {stderr.strip()}", exit_code=proc.returncode, argv=argv, stderr=stderr) from e
    return Report(
        ok=bool(raw.get("ok")) and proc.returncode == 0,
        exit_code=proc.returncode,
        command=raw.get("command", command),
        findings=[Finding.from_json(f) for f in raw.get("findings") or []],
        summary=dict(raw.get("summary") or {}),
        raw=raw,
        json=stdout,
        stderr=stderr,
    )


def diff(
    published: PathLike,
    exported: PathLike,
    *,
    values: bool = False,
    adapter: Union[str, Sequence[str], None] = None,
    atol: Optional[float] = None,
    rtol: Optional[float] = None,
    expect: Optional[str] = None,
    fail_on: Optional[str] = None,
    extra_args: Sequence[str] = (),
    use_config: bool = False,
    timeout: Optional[float] = None,
) -> Report:
    """Compare an export with the published checkpoint (``ckptcheck diff``).

    ``values`` compares every tensor's values; ``atol``/``rtol`` are the
    tolerances and ``expect`` is ``"equal"`` (the default) or ``"derived"``
    (a fine-tune of the published weights). ``adapter`` is one chain
    (``"exported=torchtitan-hf"``) or several. ``extra_args`` are more flags,
    e.g. ``("--require-files",)``. A path is a file, a directory, a hub-cache
    repo id, or an ``https://``, ``hf://`` or ``s3://`` URL.
    """
    args: List[str] = []
    if values:
        args.append("--values")
    if isinstance(adapter, str):
        adapter = [adapter]
    for a in adapter or ():
        args += ["--adapter", a]
    if atol is not None:
        args += ["--atol", repr(float(atol))]
    if rtol is not None:
        args += ["--rtol", repr(float(rtol))]
    if expect is not None:
        args += ["--expect", expect]
    if fail_on is not None:
        args += ["--fail-on", fail_on]
    args += list(extra_args)
    return run("diff", [published, exported], args, use_config=use_config, timeout=timeout)


def validate(
    *paths: PathLike,
    fail_on: Optional[str] = None,
    extra_args: Sequence[str] = (),
    use_config: bool = False,
    timeout: Optional[float] = None,
) -> Report:
    """Validate one or more checkpoints (``ckptcheck validate``)."""
    if not paths:
        raise ValueError("validate: no path given")
    args: List[str] = ["--fail-on", fail_on] if fail_on is not None else []
    return run("validate", paths, args + list(extra_args), use_config=use_config, timeout=timeout)


def inspect(
    path: PathLike,
    *,
    extra_args: Sequence[str] = (),
    use_config: bool = False,
    timeout: Optional[float] = None,
) -> Dict[str, Any]:
    """Read a checkpoint's headers (``ckptcheck inspect``): the JSON report as a dict."""
    return run("inspect", [path], extra_args, use_config=use_config, timeout=timeout).raw
