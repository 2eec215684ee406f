"""Sandboxes for the coding family: one small interface, two backends.

* ``local`` (:class:`LocalSandbox`, the default): a private copy of the repository on this machine;
  every command runs under bubblewrap with a read-only system, the workspace the only writable
  place, no network, its own process namespace, and CPU, memory, process-count, file-size and
  wall-clock limits. File tools run on the host side, resolving symlinks before checking that a
  path is inside the workspace.
* ``docker`` (:class:`DockerSandbox`): each episode in a container without network, with memory,
  CPU and process limits, taken from a pool of warm containers and removed at close.

Every command's output is cut to ``Limits.output_bytes`` (head and tail kept) and the result says
why a command ended when it did not end by itself (time limit, output limit, killed by a limit).
"""

from budgetgym.envs.coding.sandbox.base import (
    WORKDIR, Limits, RunResult, Sandbox, SandboxDied, SandboxPathError, SandboxUnavailable,
)


def make_sandbox(backend: str = "local", **options) -> Sandbox:
    """A sandbox of the named backend (``"local"`` or ``"docker"``)."""
    if backend == "local":
        from budgetgym.envs.coding.sandbox.local import LocalSandbox

        return LocalSandbox(**options)
    if backend == "docker":
        from budgetgym.envs.coding.sandbox.docker_backend import DockerSandbox

        return DockerSandbox(**options)
    raise ValueError(f"unknown sandbox backend {backend!r}; use 'local' or 'docker'")


__all__ = ["WORKDIR", "Limits", "RunResult", "Sandbox", "SandboxDied", "SandboxPathError", "SandboxUnavailable",
           "make_sandbox"]
