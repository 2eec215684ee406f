"""Put tests/ on sys.path (for toy_env, contract, registered) and register the toy env."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import registered  # noqa: E402,F401  (registers the toy env for every test folder)
