"""The pieces of ``bfcl-eval`` this adapter uses, imported on first use.

``bfcl-eval`` is an optional extra: ``import budgetgym`` must work without it, and ``gym.make`` must
say exactly how to install it. Its normal install pins an old numpy and pulls in torch, while the
multi-turn backend needs only the package itself and ``mpmath`` (BFCL's ``MathAPI`` imports it), hence
the ``--no-deps`` instruction. Only light modules are imported here: ``bfcl_eval.utils`` and
``bfcl_eval.constants.eval_config`` are avoided because importing them creates result folders inside
site-packages and needs ``filelock``.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Callable, Mapping

from budgetgym.core.extras import MissingExtra

INSTALL_COMMAND = "pip install --no-deps bfcl-eval mpmath"


class BFCLNotInstalled(MissingExtra):
    """bfcl-eval (or mpmath) is missing: the message gives the install command."""


@dataclass(frozen=True)
class Upstream:
    """BFCL's data locations, constants, multi-turn executor and checkers."""

    data_dir: Path
    version_prefix: str
    func_doc_files: Mapping[str, str]
    class_modules: Mapping[str, str]  # class name -> the module BFCL's executor imports it from
    stateless_classes: frozenset[str]  # the classes the executor builds without a scenario
    type_mapping: Mapping[str, str]
    new_functions_prompt: str
    execute_multi_turn_func_call: Callable[..., tuple[list[str], dict[str, Any]]]
    executor_module: ModuleType
    state_checker: Callable[[dict, dict], dict]
    response_checker: Callable[[list, list, int], dict]
    mpmath: ModuleType

    def __reduce__(self) -> tuple[Any, ...]:
        return load_upstream, ()  # modules do not pickle: an unpickled env imports bfcl-eval again

    def __deepcopy__(self, memo: dict[int, Any]) -> "Upstream":
        return self


@functools.lru_cache(maxsize=1)  # a failed import is not cached: installing the extra later works
def load_upstream() -> Upstream:
    """Import bfcl-eval, or raise :class:`BFCLNotInstalled` with the install command."""
    try:
        import mpmath  # BFCL's MathAPI imports it; checked here so the message comes at make time
        from bfcl_eval.constants import category_mapping, default_prompts, executable_backend_config
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils
    except ImportError as err:
        raise BFCLNotInstalled("bfcl", "budgetgym/BFCL-v0", missing="the bfcl-eval package and mpmath",
                               install=INSTALL_COMMAND, detail=str(err)) from err
    return Upstream(
        data_dir=Path(str(importlib.resources.files("bfcl_eval") / "data")),
        version_prefix=category_mapping.VERSION_PREFIX,
        func_doc_files=MappingProxyType(dict(executable_backend_config.MULTI_TURN_FUNC_DOC_FILE_MAPPING)),
        class_modules=MappingProxyType(dict(executable_backend_config.CLASS_FILE_PATH_MAPPING)),
        stateless_classes=frozenset(executable_backend_config.STATELESS_CLASSES),
        type_mapping=MappingProxyType(dict(GORILLA_TO_OPENAPI)),
        new_functions_prompt=default_prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
        execute_multi_turn_func_call=multi_turn_utils.execute_multi_turn_func_call,
        executor_module=multi_turn_utils,
        state_checker=multi_turn_checker.state_checker,
        response_checker=multi_turn_checker.response_checker,
        mpmath=mpmath,
    )
