"""BFCL's function docs as budgetgym tools: Gorilla types turned into JSON Schema (Draft 2020-12).

BFCL documents each method of its backend classes in ``data/multi_turn_func_doc/*.json`` with
Gorilla's own types ("dict", "float", "tuple", "any", ...). The core validates every call against a
tool's JSON Schema before the env runs it, so the docs are converted with BFCL's own type table
(``GORILLA_TO_OPENAPI``), with one exception: "any" (and a type missing from the table) becomes an
unconstrained schema rather than BFCL's "string", because the Python method accepts any value.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Mapping

from budgetgym.core.tools import Tool
from budgetgym.envs.bfcl.upstream import load_upstream

# Keywords copied as they are: they mean the same in BFCL's docs and in JSON Schema.
_KEPT_KEYWORDS = ("description", "enum", "default")

# Schema keywords added to, or replacing, what BFCL's docs say of a parameter (class, parameter):
# - where BFCL's own data contradicts its docs, a parameter admits what the data uses, so that no
#   entry becomes unsolvable here (BFCL's executor checks no types). TicketAPI documents ticket ids
#   as integers, yet multi_turn_*_173 holds a ticket with the id "ticket_001" and closes it by that id;
# - where an argument makes BFCL's MathAPI compute for minutes (mpmath or decimal at a million
#   digits, an integer power or rounding with a million-digit result), a bound: a step cannot be
#   interrupted inside that computation, so the schema the model sees refuses it instead. The bounds
#   are far beyond any value BFCL's data uses.
_PARAMETER_OVERRIDES: dict[tuple[str, str], dict[str, Any]] = {
    ("TicketAPI", "ticket_id"): {"type": ["integer", "string"]},
    ("MathAPI", "precision"): {"minimum": 1, "maximum": 1000},
    ("MathAPI", "exponent"): {"minimum": -1000, "maximum": 1000},
    ("MathAPI", "decimal_places"): {"minimum": -1000, "maximum": 1000},
}


def parameter_schema(spec: Mapping[str, Any], type_mapping: Mapping[str, str]) -> dict[str, Any]:
    """One parameter's Gorilla spec as a JSON Schema."""
    schema: dict[str, Any] = {}
    gorilla_type = spec.get("type")
    json_type = type_mapping.get(gorilla_type) if gorilla_type != "any" else None
    if json_type is not None:
        schema["type"] = json_type
    for keyword in _KEPT_KEYWORDS:
        if keyword in spec:
            schema[keyword] = spec[keyword]
    if isinstance(spec.get("properties"), Mapping):
        schema["properties"] = {name: parameter_schema(sub, type_mapping) for name, sub in spec["properties"].items()}
    if isinstance(spec.get("required"), list):
        schema["required"] = list(spec["required"])
    if isinstance(spec.get("items"), Mapping):
        schema["items"] = parameter_schema(spec["items"], type_mapping)
    return schema


def tool_from_doc(doc: Mapping[str, Any], type_mapping: Mapping[str, str],
                  overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Tool:
    """A BFCL function doc as a :class:`Tool`; arguments it does not document are refused.

    ``overrides`` adds schema keywords to the named parameters (see ``_PARAMETER_OVERRIDES``).
    """
    params = doc.get("parameters", {})
    properties = {name: parameter_schema(spec, type_mapping) for name, spec in params.get("properties", {}).items()}
    for name, keywords in (overrides or {}).items():
        if name in properties:
            properties[name].update(keywords)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        # A method called with an undocumented keyword would only fail inside BFCL's code.
        "additionalProperties": False,
    }
    if params.get("required"):
        schema["required"] = list(params["required"])
    return Tool(doc["name"], doc.get("description", ""), schema)


@functools.lru_cache(maxsize=None)
def class_tools(class_name: str) -> tuple[Tool, ...]:
    """The tools of one BFCL backend class, in the order of its doc file (built once per process)."""
    upstream = load_upstream()
    path = upstream.data_dir / "multi_turn_func_doc" / upstream.func_doc_files[class_name]
    with open(path, encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle if line.strip()]
    overrides = {param: keywords for (cls, param), keywords in _PARAMETER_OVERRIDES.items() if cls == class_name}
    return tuple(tool_from_doc(doc, upstream.type_mapping, overrides) for doc in docs)
