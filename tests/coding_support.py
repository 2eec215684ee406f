"""Shared pieces of the coding tests: which backends run here, and the Docker test image."""

from __future__ import annotations

import functools
import shutil

import pytest


@functools.lru_cache(maxsize=None)
def docker_problem() -> str | None:
    """Why the Docker backend cannot run here, or None when it can (engine up, image built)."""
    from budgetgym.envs.coding.image import IMAGE, image_exists
    from budgetgym.envs.coding.sandbox import SandboxUnavailable
    from budgetgym.envs.coding.sandbox.docker_backend import docker_client

    try:
        client = docker_client()
    except SandboxUnavailable as err:
        return str(err)
    if not image_exists(client, IMAGE):
        return f"the image {IMAGE} is not built (make test builds it as root: python -m budgetgym.envs.coding.image)"
    return None


def require(backend: str) -> None:
    """Skip, with the reason, a backend that cannot run on this machine."""
    if backend == "local" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (make test installs it as root)")
    if backend == "docker" and docker_problem():
        pytest.skip(docker_problem())


BACKENDS = ("local", "docker")
