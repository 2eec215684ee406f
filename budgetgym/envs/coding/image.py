"""The small Python image the Docker backend runs episodes in, built locally without a registry.

``python -m budgetgym.envs.coding.image`` builds it once: ``debootstrap --variant=minbase`` of Debian
bookworm with python3, python3-pytest and git into a scratch folder, then ``docker import``. It
does nothing when the image already exists (``--force`` rebuilds). The first build took 50 s on
the development machine (debootstrap 46 s, the import 3 s; 218 MB); nothing is pulled from an
image registry. Needs root (debootstrap), a Debian mirror and a running Docker engine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from budgetgym.envs.coding.sandbox.docker_backend import IMAGE, docker_client

PACKAGES = ("python3", "python3-pytest", "git")
SUITE = "bookworm"
MIRROR = os.environ.get("BUDGETGYM_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def image_exists(client, name: str = IMAGE) -> bool:
    import docker.errors

    try:
        client.images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(name: str = IMAGE, force: bool = False, log=print) -> bool:
    """Build ``name`` unless it exists; True when a build ran. Raises RuntimeError with the cause."""
    client = docker_client()
    if not force and image_exists(client, name):
        log(f"{name}: already built")
        return False
    if shutil.which("debootstrap") is None:
        raise RuntimeError("debootstrap is not installed: apt-get install -y debootstrap")
    if os.geteuid() != 0:
        raise RuntimeError("building the image runs debootstrap, which needs root")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="budgetgym-rootfs-") as root:
        command = ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, root, MIRROR]
        log("$ " + " ".join(command))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"debootstrap failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        # `python` as well as `python3`, as on most development machines.
        os.symlink("python3", os.path.join(root, "usr/bin/python"))
        # Smaller image, faster import: package caches and docs are not needed to run tests.
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"):
            shutil.rmtree(os.path.join(root, sub), ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        try:
            client.api.import_image_from_stream(tar.stdout, repository=name.split(":")[0], tag=name.split(":")[1])
        finally:
            tar.stdout.close()
            tar.wait()
    if not image_exists(client, name):
        raise RuntimeError(f"docker import did not produce {name}")
    log(f"{name}: built in {time.monotonic() - started:.0f} s")
    return True


__all__ = ["IMAGE", "build_image", "image_exists", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default=IMAGE)
    parser.add_argument("--force", action="store_true", help="rebuild even when the image exists")
    args = parser.parse_args(argv)
    try:
        build_image(args.name, force=args.force)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
