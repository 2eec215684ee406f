"""JSON Schema validation, one compiled validator per schema per process.

Two things are validated on hot paths: every tool call's arguments (each step) and a snapshot's
fast-restore state (each restore). ``jsonschema`` (Draft 2020-12) is the authority; ``fastjsonschema``
compiles a schema to Python and accepts a valid value one to two orders of magnitude faster. It is
used only for schemas whose keywords mean the same in both (``_SHARED_KEYWORDS``, and Draft
2020-12's ``prefixItems``, which is Draft 7's array form of ``items``), and only to accept:
anything it rejects goes to ``jsonschema``, whose verdict and message stand. The commonest tool
schema, an object of string properties with at most length bounds and no other properties (a
query, a path, an element's text), is accepted by a plain check before it (:func:`_text_fields_check`):
5-7x faster than the compiled code for no argument or one, and under the same rule, only to accept.

Checking a schema against the meta-schema and compiling it take milliseconds, so both happen on a
schema's first use, and the result is kept in a per-process cache keyed by the schema's JSON: every
tool, env and worker of the process with the same schema shares one :class:`SchemaValidator` (and
``jsonschema`` itself is imported then, about 40 ms).
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any, Callable, Mapping

import fastjsonschema

# Keywords whose meaning is the same in Draft 7 (fastjsonschema) and Draft 2020-12 (jsonschema).
_SHARED_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "anyOf",
    "oneOf", "allOf", "not", "description", "title", "default", "examples", "format",
})
# Draft 2020-12 keywords that Draft 7 spells differently, translated for the fast validator.
_TRANSLATED_KEYWORDS = frozenset({"prefixItems"})


class SchemaValidator:
    """The validators of one JSON Schema (Draft 2020-12): ``jsonschema``'s, and the compiled fast
    one where the schema's keywords allow (:attr:`fast`). Build through :func:`validator_for`."""

    __slots__ = ("schema", "_authority", "_fast", "_accepts")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        import jsonschema  # about 40 ms to import: paid on the first validation, not by every import

        body = plain(schema)
        jsonschema.Draft202012Validator.check_schema(body)  # SchemaError for an invalid schema
        self.schema = body
        self._authority = jsonschema.Draft202012Validator(body)
        # use_default=False: fastjsonschema would otherwise write defaults into the value.
        self._fast: Callable[[Any], Any] | None = (
            fastjsonschema.compile(_draft7(body), use_default=False) if _fast_compatible(body) else None)
        self._accepts: Callable[[Any], bool] | None = _text_fields_check(body)

    @property
    def plain_check(self) -> Callable[[Any], bool] | None:
        """The plain check of a text-fields schema (True only for a valid value), or None."""
        return self._accepts

    @property
    def fast(self) -> bool:
        """Whether valid values are accepted by the compiled validator (or the plain check)."""
        return self._fast is not None or self._accepts is not None

    def is_valid(self, value: Any) -> bool:
        if self._accepts is not None and self._accepts(value):
            return True
        if self._fast is not None:
            try:
                self._fast(value)
                return True
            except fastjsonschema.JsonSchemaException:
                pass  # jsonschema decides
        return self._authority.is_valid(value)

    def error(self, value: Any) -> Any:
        """None when ``value`` is valid, else ``jsonschema``'s best-matching ``ValidationError``."""
        accepts = self._accepts
        if accepts is not None and accepts(value):  # every tool call of every step comes here
            return None
        fast = self._fast
        if fast is not None:  # is_valid's fast path inline
            try:
                fast(value)
                return None
            except fastjsonschema.JsonSchemaException:
                pass  # jsonschema decides
        if self._authority.is_valid(value):
            return None
        from jsonschema.exceptions import best_match  # imported with the validator

        return best_match(self._authority.iter_errors(value))


_VALIDATORS: dict[str, SchemaValidator] = {}
_BY_IDENTITY: dict[int, tuple[Mapping[str, Any], SchemaValidator]] = {}
_LOCK = threading.Lock()
_KEPT = 4096  # distinct schemas kept per process (tools, and one state schema per task at most)


def validator_for(schema: Mapping[str, Any]) -> SchemaValidator:
    """The process's one :class:`SchemaValidator` of ``schema`` (checked and compiled on first use;
    raises ``jsonschema.SchemaError`` for an invalid schema). A schema object met before is found
    by identity, without serialising it (a schema is not changed once in use)."""
    same = _BY_IDENTITY.get(id(schema))
    if same is not None and same[0] is schema:
        return same[1]
    key = json.dumps(schema, sort_keys=True, default=repr)
    found = _VALIDATORS.get(key)
    if found is None:
        with _LOCK:
            found = _VALIDATORS.get(key)
            if found is None:
                found = SchemaValidator(schema)
                if len(_VALIDATORS) >= _KEPT:  # generated task sets: one schema per task, unbounded
                    _VALIDATORS.pop(next(iter(_VALIDATORS)))
                _VALIDATORS[key] = found
    with _LOCK:
        if len(_BY_IDENTITY) >= _KEPT:
            _BY_IDENTITY.pop(next(iter(_BY_IDENTITY)))
        _BY_IDENTITY[id(schema)] = (schema, found)  # the schema held, so its id is not reused
    return found


def _fast_compatible(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping) or not set(schema) <= _SHARED_KEYWORDS | _TRANSLATED_KEYWORDS:
        return False
    if isinstance(schema.get("items"), (list, tuple)):  # tuple validation differs between drafts
        return False
    prefix = schema.get("prefixItems", [])
    if not isinstance(prefix, (list, tuple)):
        return False
    subschemas = [*schema.get("properties", {}).values(), *prefix]
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), (Mapping, bool)):
            subschemas.append(schema[key])
    for key in ("anyOf", "oneOf", "allOf"):
        subschemas.extend(schema.get(key, ()))
    return all(_fast_compatible(s) for s in subschemas)


# What a property of a text-fields schema may say besides its type: bounds, and words for the reader.
_TEXT_FIELD_KEYWORDS = frozenset({"type", "minLength", "maxLength", "description", "title", "examples"})


def _text_fields_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A plain check that accepts exactly the valid values of a text-fields schema (``type: object``,
    string properties with at most ``minLength``/``maxLength``, ``required`` among them,
    ``additionalProperties: false``, nothing else); None for any other schema.

    It accepts only a plain ``dict`` of plain ``str`` values (subclasses go to the validators),
    and measures length as JSON Schema does, in code points (Python's ``len``). A value it turns
    down may still be valid: the caller asks the other validators."""
    if set(schema) - {"type", "properties", "required", "additionalProperties", "description", "title"}:
        return None
    properties, required = schema.get("properties", {}), schema.get("required", [])
    if (schema.get("type") != "object" or schema.get("additionalProperties") is not False
            or not isinstance(properties, dict) or not isinstance(required, list)
            or not set(required) <= set(properties)):
        return None
    bounds: dict[str, tuple[int, float]] = {}
    for name, spec in properties.items():
        if not isinstance(spec, dict) or spec.get("type") != "string" or set(spec) - _TEXT_FIELD_KEYWORDS:
            return None
        low, high = spec.get("minLength", 0), spec.get("maxLength", math.inf)
        if type(low) is not int or not (high is math.inf or type(high) is int):
            return None
        bounds[name] = (low, high)
    needed = frozenset(required)
    if not bounds:  # no arguments (a "back" tool): only the empty object
        return _accepts_empty
    if len(bounds) == 1 and needed:  # one required text (a query, an element): a dict of just that key
        (name, (low, high)), = bounds.items()

        def accepts_one(value: Any) -> bool:
            if type(value) is not dict or len(value) != 1:
                return False
            text = value.get(name)
            return type(text) is str and low <= len(text) <= high

        return accepts_one

    def accepts(value: Any) -> bool:
        if type(value) is not dict or not needed <= value.keys():
            return False
        for name, text in value.items():
            limits = bounds.get(name)
            if limits is None or type(text) is not str or not limits[0] <= len(text) <= limits[1]:
                return False
        return True

    return accepts


def _accepts_empty(value: Any) -> bool:
    return type(value) is dict and not value


def _draft7(schema: Any) -> Any:
    """A fast-compatible Draft 2020-12 schema in Draft 7's words: ``prefixItems`` P with ``items`` S
    is Draft 7's ``items`` P with ``additionalItems`` S (positions checked in order, the rest by S)."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("properties",):
            out[key] = {name: _draft7(sub) for name, sub in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [_draft7(sub) for sub in value]
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _draft7(value)
        else:
            out[key] = value
    if "prefixItems" in out:
        prefix = out.pop("prefixItems")
        if "items" in out:
            out["additionalItems"] = out.pop("items")
        out["items"] = prefix
    return out


def plain(value: Any) -> Any:
    """Deep-copy mappings and sequences into plain dicts and lists (JSON-serialisable, safe to mutate)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
