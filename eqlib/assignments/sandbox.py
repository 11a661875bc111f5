"""Running a student's notebook apart: bubblewrap, or ``unshare`` where bubblewrap is missing.

The sandbox sees the file system read-only, without the folders the grader hides (the
course folder with its gradebook and every other submission, the submissions folder, the
book's instructor notebooks, ``/tmp``, home folders other than the Python installation),
a private writable scratch folder (its working directory, ``HOME`` and ``TMPDIR``), a fresh
``/proc`` and ``/dev``, no network (a network namespace with no interface but loopback),
its own process-id namespace (it cannot see or signal the grader), a cleared environment,
and resource limits: CPU seconds, address space, file size, open files. The wall-clock
limit kills the whole namespace.

It does *not* protect against bugs in the Linux kernel or bubblewrap, against a student
reading what every student may read (the installed package, the Python installation,
``EQLIB_DATA``), or against CPU and memory use within the limits.

Chapter: book/teaching (*What the isolation protects*).
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds eqlib/


@dataclass
class Limits:
    wall_s: float = 600.0
    cpu_s: int = 900
    memory_bytes: int = 16 * 2 ** 30  # address space (torch reserves much it never touches)
    file_bytes: int = 256 * 2 ** 20
    open_files: int = 256


@dataclass
class Result:
    returncode: int
    timed_out: bool
    stderr: str
    method: str
    command: list[str] = field(default_factory=list)


def method() -> str:
    """``"bwrap"`` if bubblewrap runs here, else ``"unshare"`` if user namespaces do, else ``"none"``."""
    if getattr(method, "_cached", None):
        return method._cached
    found = "none"
    if shutil.which("bwrap") and _works(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
                                         "--proc", "/proc", "true"]):
        found = "bwrap"
    elif shutil.which("unshare") and _works(["unshare", "--user", "--map-root-user", "--mount", "--net",
                                             "--pid", "--fork", "--mount-proc", "true"]):
        found = "unshare"
    method._cached = found
    return found


def _works(cmd) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _hidden(hide: list[Path]) -> list[str]:
    out = []
    for p in hide:
        p = Path(p).resolve()
        if p.is_dir() and p != Path("/"):
            out.append(str(p))
    return sorted(set(out), key=len)


def _env(scratch: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("EQLIB_DATA", "EQLIB_BUDGET", "EQLIB_CACHE", "LANG", "LC_ALL")
            if k in os.environ}
    return {**keep, **(extra or {}), "PATH": os.path.dirname(sys.executable) + ":/usr/local/bin:/usr/bin:/bin",
            "HOME": scratch, "TMPDIR": scratch, "PYTHONPATH": str(PACKAGE_ROOT), "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1", "NBGRADER_EXECUTION": "autograde", "EQLIB_SANDBOX": "1"}


def _kept_under_tmp(env: dict[str, str]) -> list[str]:
    """The package folder and ``EQLIB_DATA`` where they lie under ``/tmp`` or ``/dev/shm``.

    The sandbox gets an empty ``/tmp``; a checkout or a data copy there (as in a CI clone)
    is bound back read-only, or the student's kernel could not import eqlib or load data.
    """
    keep = []
    for raw in (str(PACKAGE_ROOT), env.get("EQLIB_DATA", "")):
        if not raw:
            continue
        path = Path(raw).resolve()
        if path.exists() and any(path == Path(t) or Path(t) in path.parents for t in ("/tmp", "/dev/shm")):
            keep.append(str(path))
    return keep


def command(scratch: Path, argv: list[str], hide: list[Path], how: str | None = None,
            env: dict[str, str] | None = None,
            overlays: dict[Path, Path] | None = None) -> tuple[list[str], dict]:
    """The command line that runs ``argv`` in the sandbox, with ``scratch`` writable and
    ``env`` (the student's ``EQLIB_STUDENT`` and ``EQLIB_COURSE``) added to its environment.
    ``overlays`` ({folder: stand-in}, stand-ins inside ``scratch``) shows each stand-in,
    read-only, in place of its folder (the method ``none`` has no overlays)."""
    how = how or method()
    scratch = str(Path(scratch).resolve())
    overlays = {str(Path(k).resolve()): str(Path(v).resolve()) for k, v in (overlays or {}).items()
                if "'" not in str(k) + str(v)}
    env = _env(scratch, env)
    hidden = [h for h in _hidden(hide) if not scratch.startswith(h + "/") and h != scratch]
    if how == "bwrap":
        cmd = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--uid", "65534", "--gid", "65534",
               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
        for keep in _kept_under_tmp(env):  # the package and the data, should they lie under /tmp
            cmd += ["--ro-bind", keep, keep]
        for h in hidden:
            cmd += ["--tmpfs", h, "--remount-ro", h]
        cmd += ["--bind", scratch, scratch]
        for dest, src in overlays.items():
            cmd += ["--ro-bind", src, dest]
        cmd += ["--chdir", scratch, "--clearenv"]
        for k, v in env.items():
            cmd += ["--setenv", k, v]
        return cmd + ["--"] + argv, env
    if how == "unshare":
        # park the scratch folder and the kept paths on a private /dev/shm, hide, empty /tmp,
        # move them back, make everything but the scratch folder read-only
        keep = [k for k in _kept_under_tmp(env) if "'" not in k]
        script = ["set -e", "mount --make-rprivate /", "mount -t tmpfs none /dev/shm",
                  "mkdir /dev/shm/scratch", f"mount --bind '{scratch}' /dev/shm/scratch"]
        for i, k in enumerate(keep):
            script += [f"mkdir /dev/shm/keep{i}", f"mount --bind '{k}' /dev/shm/keep{i}"]
        script += [f"mount -t tmpfs -o ro none '{h}'" for h in hidden if "'" not in h]
        script += ["mount -t tmpfs none /tmp"]
        for i, k in enumerate(keep):  # before the scratch folder, which may lie inside one
            script += [f"mkdir -p '{k}'", f"mount --move /dev/shm/keep{i} '{k}'"]
        script += [f"mkdir -p '{scratch}'", f"mount --move /dev/shm/scratch '{scratch}'"]
        script += [f"mount --bind '{src}' '{dest}'" for dest, src in overlays.items()]
        script += ["for m in $(awk '{print $2}' /proc/self/mounts); do "
                   f"[ \"$m\" = '{scratch}' ] || mount -o remount,bind,ro \"$m\" 2>/dev/null || true; done",
                   f"cd '{scratch}'", 'exec "$@"']
        cmd = ["unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--fork", "--mount-proc",
               "--kill-child", "sh", "-c", "\n".join(script), "sandbox"]
        return ["env", "-i", *[f"{k}={v}" for k, v in env.items()], *cmd, *argv], env
    return argv, env


def _limits(limits: Limits):
    def apply():
        os.setsid()
        for res, value in ((resource.RLIMIT_CPU, limits.cpu_s), (resource.RLIMIT_AS, limits.memory_bytes),
                           (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_NOFILE, limits.open_files),
                           (resource.RLIMIT_CORE, 0)):
            try:
                resource.setrlimit(res, (value, value))
            except (ValueError, OSError):
                pass
    return apply


def run(scratch: Path, argv: list[str], hide: list[Path], limits: Limits, how: str | None = None,
        env: dict[str, str] | None = None, overlays: dict[Path, Path] | None = None) -> Result:
    """Run ``argv`` sandboxed in ``scratch`` (``env`` added to its environment, ``overlays``
    as in ``command``); kill it at ``limits.wall_s``."""
    how = how or method()
    cmd, env = command(scratch, argv, hide, how, env, overlays)
    proc = subprocess.Popen(cmd, cwd=scratch, env=env if how == "none" else None, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_limits(limits))
    timed_out = False
    try:
        _, err = proc.communicate(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()
        _, err = proc.communicate()
    return Result(proc.returncode, timed_out, err.decode("utf-8", "replace")[-20_000:], how, cmd)
