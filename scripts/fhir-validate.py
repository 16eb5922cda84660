#!/usr/bin/env python3
"""Validates FHIR R4 JSON resources with an independent validator (tests only).

usage: fhir-validate.py FILE... ; each FILE holds one resource (a Bundle is validated whole,
its entries included). Prints one line per file, 'ok FILE' or 'invalid FILE: reasons', and exits
0 when all are valid, 1 otherwise, 2 on a usage or installation error.

The validator is fhir.resources 6.4.0 (FHIR R4 4.0.1; pydantic models generated from the
specification): structure, required elements, cardinality, primitive types and their regular
expressions, unknown elements. It does not check required value-set bindings or invariants, so
the few of those that our resources touch are checked here from the R4 specification text:
the status codes of Flag, Observation and Bundle, ext-1 (an extension has a value or
extensions, not both) and obs-6 (dataAbsentReason only without a value).
"""
import json
import sys

try:
    from fhir.resources import construct_fhir_element
    import fhir.resources
except ImportError as e:  # pragma: no cover
    print(f"fhir-validate: fhir.resources is not installed ({e}); run scripts/install-deps.sh", file=sys.stderr)
    sys.exit(2)

# Required bindings, from the R4 (4.0.1) value sets.
STATUS = {
    "Flag": {"active", "inactive", "entered-in-error"},
    "Observation": {"registered", "preliminary", "final", "amended", "corrected", "cancelled", "entered-in-error", "unknown"},
}
BUNDLE_TYPES = {"document", "message", "transaction", "transaction-response", "batch", "batch-response", "history", "searchset", "collection"}


def extensions_ok(node, path, errors):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "extension" and isinstance(v, list):
                for i, e in enumerate(v):
                    has_value = any(key.startswith("value") for key in e)
                    has_ext = "extension" in e
                    if has_value == has_ext:
                        errors.append(f"{path}.extension[{i}] ({e.get('url')}): ext-1: must have either extensions or value[x], not both")
            extensions_ok(v, f"{path}.{k}", errors)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            extensions_ok(v, f"{path}[{i}]", errors)


def bindings(resource, path, errors):
    t = resource.get("resourceType")
    if t in STATUS and resource.get("status") not in STATUS[t]:
        errors.append(f"{path}.status: '{resource.get('status')}' is not in the required value set of {t}.status")
    if t == "Observation" and "dataAbsentReason" in resource and any(k.startswith("value") for k in resource):
        errors.append(f"{path}: obs-6: dataAbsentReason only when there is no value")
    if t == "Bundle":
        if resource.get("type") not in BUNDLE_TYPES:
            errors.append(f"{path}.type: '{resource.get('type')}' is not a Bundle type")
        for i, e in enumerate(resource.get("entry", [])):
            if isinstance(e.get("resource"), dict):
                bindings(e["resource"], f"{path}.entry[{i}].resource", errors)


def validate(text):
    try:
        data = json.loads(text)
    except ValueError as e:
        return [f"not JSON: {e}"]
    if not isinstance(data, dict) or "resourceType" not in data:
        return ["not a FHIR resource (no resourceType)"]
    errors = []
    try:
        construct_fhir_element(data["resourceType"], data)
    except Exception as e:  # pydantic.ValidationError, or an unknown resource type
        errors.append(" | ".join(line for line in str(e).splitlines()))
    bindings(data, data["resourceType"], errors)
    extensions_ok(data, data["resourceType"], errors)
    return errors


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    if fhir.resources.__fhir_version__ != "4.0.1":
        print(f"fhir-validate: fhir.resources models FHIR {fhir.resources.__fhir_version__}, not R4 4.0.1", file=sys.stderr)
        return 2
    bad = 0
    for path in argv[1:]:
        with open(path, encoding="utf-8") as f:
            errors = validate(f.read())
        if errors:
            bad += 1
            print(f"invalid {path}: " + "; ".join(errors))
        else:
            print(f"ok {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
