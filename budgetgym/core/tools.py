"""Tools: a name, a description, a JSON Schema for the arguments, and the code that runs it.

Each environment family declares its tools with :class:`Tool`; the action parser validates every
call against the tool's schema before anything runs, so an env only ever executes well-formed calls.
The OpenAI-style function schema an LLM sees is derived from the same object (``openai_schema``),
so what the model is told and what is checked cannot drift apart.

Validation is on the hot path of every step: :mod:`budgetgym.core.schemas` holds the one compiled
validator of each schema per process (``jsonschema`` the authority, ``fastjsonschema`` to accept
fast). A tool compiles its schema on its first validation, not when it is declared or an env is
made (about 0.2 s for a family of 42 tools); ``Tool.compile()`` does it ahead of time (a test runs
it over every shipped tool).

The schema an LLM sees in ``info["tools"]`` is one read-only object per tool (``shared_schema``:
dicts and lists that refuse changes, JSON-serialisable, pickled and copied as plain ones), shared
by every reset; ``openai_schema()`` returns a fresh mutable copy.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping

from budgetgym.core.schemas import SchemaValidator, plain, validator_for

class ToolError(Exception):
    """A tool refused the call (file not found, insufficient funds, ...): a normal observation for
    the agent, never an exception out of ``step``."""


def object_schema(properties: Mapping[str, Any], required: Collection[str] = ()) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments: the named properties, no others."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def tool_map(*tools: "Tool") -> dict[str, "Tool"]:
    """Name -> tool, in the given order, refusing duplicate names."""
    table: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in table:
            raise ValueError(f"duplicate tool name {tool.name!r}")
        table[tool.name] = tool
    return table


@dataclass(frozen=True)
class Tool:
    """One callable tool.

    Args:
        name: the identifier a model calls it by.
        description: one or two sentences for the model.
        parameters: JSON Schema of the ``arguments`` object (``type: object``).
        function: the implementation; its signature is the family's business (for example
            ``function(backend, **arguments)``). ``None`` for tools executed elsewhere (adapters).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"tool {self.name!r} is not an identifier")
        if self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON Schema of type 'object'")
        parameters = plain(self.parameters)  # a private plain copy, read by the validators and the schemas
        object.__setattr__(self, "_plain_parameters", parameters)
        object.__setattr__(self, "_compiled", None)  # its SchemaValidator, on first use
        object.__setattr__(self, "_plain_accepts", None)  # set by compile() (see there)
        # info["tools"] is built at every reset: one read-only schema per tool, shared by every reset.
        schema = {"type": "function", "function": {"name": self.name, "description": self.description,
                                                   "parameters": parameters}}
        object.__setattr__(self, "shared_schema", frozen(schema))
        object.__setattr__(self, "_openai_pickle", pickle.dumps(schema, protocol=pickle.HIGHEST_PROTOCOL))
        # Integer parameters: JSON Schema's "integer" admits 2.0, but tool code indexes and slices with it.
        integers = tuple(name for name, spec in self.parameters.get("properties", {}).items()
                         if isinstance(spec, Mapping) and spec.get("type") == "integer")
        object.__setattr__(self, "_integer_params", integers)

    def compile(self) -> None:
        """Check the schema against Draft 2020-12's meta-schema and build its validators now (else
        on the first validation). Raises ``jsonschema.SchemaError`` for an invalid schema."""
        if self._compiled is None:  # type: ignore[attr-defined]
            compiled = validator_for(self._plain_parameters)  # type: ignore[attr-defined]
            # The parser accepts a call by the schema's plain check alone (no validation_error and
            # normalise calls, every step's path) where those two are Tool's own: the check accepts
            # only valid text-fields values, which have no integer to normalise.
            if type(self).validation_error is Tool.validation_error and type(self).normalise is Tool.normalise:
                object.__setattr__(self, "_plain_accepts", compiled.plain_check)
            object.__setattr__(self, "_compiled", compiled)

    @property
    def validator(self) -> SchemaValidator:
        """The process's shared validator of this tool's schema (compiled on first use)."""
        self.compile()
        return self._compiled  # type: ignore[attr-defined]

    def __reduce__(self) -> tuple[Any, ...]:
        # The compiled validator is generated code that pickle cannot take: a tool pickles as its
        # definition, and unpickles to the same process's tool of that definition when there is one.
        return _revive, (self.name, self.description, plain(self.parameters), self.function)

    def __deepcopy__(self, memo: dict[int, Any]) -> "Tool":
        return self  # immutable

    @property
    def param_names(self) -> tuple[str, ...]:
        """Declared parameter names, in declaration order (positional call syntax follows it)."""
        return tuple(self.parameters.get("properties", {}))

    def validation_error(self, arguments: Any) -> str | None:
        """Return a readable message for the first schema violation, or None when valid."""
        validator = self._compiled  # type: ignore[attr-defined]
        if validator is None:
            self.compile()
            validator = self._compiled  # type: ignore[attr-defined]
        error = validator.error(arguments)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message}" + (f" (at '{where}')" if where else "")

    def signature(self) -> str:
        """A one-line human signature, e.g. ``mv(source: string, destination: string, overwrite?: boolean)``."""
        props = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", ()))
        parts = []
        for name, spec in props.items():
            kind = spec.get("type", "any")
            if isinstance(kind, list):
                kind = "|".join(kind)
            parts.append(f"{name}{'' if name in required else '?'}: {kind}")
        return f"{self.name}({', '.join(parts)})"

    def openai_schema(self) -> dict[str, Any]:
        """The tool in the OpenAI chat-completions ``tools`` format (a fresh copy, safe to mutate)."""
        return pickle.loads(self._openai_pickle)  # type: ignore[attr-defined]

    def normalise(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        """Valid arguments as the tool's code wants them: integral floats of integer parameters as ints."""
        integers = self._integer_params  # type: ignore[attr-defined]
        if not integers or not any(type(arguments.get(name)) is float for name in integers):
            return arguments
        return {k: int(v) if k in integers and type(v) is float else v for k, v in arguments.items()}


class FrozenDict(dict):
    """A dict that refuses changes: shared read-only data that is still JSON (``json.dumps`` takes
    it, ``==`` compares it with plain dicts). Pickles and copies as a plain, mutable dict."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this dict is shared and read-only: change a copy (dict(d) or copy.deepcopy(d))")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)


class FrozenList(list):
    """A list that refuses changes (see :class:`FrozenDict`). Pickles and copies as a plain list."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this list is shared and read-only: change a copy (list(x) or copy.deepcopy(x))")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = pop = remove = clear = \
        sort = reverse = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (list(self),)

    def __copy__(self) -> list[Any]:
        return list(self)


def frozen(value: Any) -> Any:
    """A deep, read-only copy of JSON-shaped ``value`` (:class:`FrozenDict`, :class:`FrozenList`)."""
    if isinstance(value, Mapping):
        return FrozenDict((k, frozen(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return FrozenList(frozen(v) for v in value)
    return value


_REVIVED: dict[tuple[str, str, str, Any], Tool] = {}


def _revive(name: str, description: str, parameters: Mapping[str, Any], function: Callable[..., Any] | None) -> Tool:
    """A tool from its pickled definition; built (and its validator compiled) once per process."""
    key = (name, description, json.dumps(parameters, sort_keys=True), function)
    tool = _REVIVED.get(key)
    if tool is None:
        tool = _REVIVED[key] = Tool(name, description, parameters, function)
    return tool
