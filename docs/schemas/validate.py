#!/usr/bin/env python3
"""Validates JSON documents against the schemas beside this script (JSON Schema draft 2020-12,
with the `jsonschema` package).

    validate.py [--every-schema] DIR

Each file DIR/SCHEMA__LABEL.json is one document of SCHEMA (docs/schemas/SCHEMA.schema.json).
Every schema is first checked as a schema. Then, for each document: it must be valid, and it
must become INVALID when any one of the properties its schema requires at the top is removed
(so a schema that accepts anything cannot pass). With --every-schema, each schema file must
have had at least one document. Prints one line per document and a summary; exit 1 on any
failure. The protocol test suite `json_schemas` runs it on real output.
"""
import json
import pathlib
import sys

import jsonschema
from referencing import Registry, Resource

HERE = pathlib.Path(__file__).resolve().parent


def load_schemas():
    schemas = {}
    for path in sorted(HERE.glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        schemas[path.name[: -len(".schema.json")]] = schema
    registry = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values()
    )
    return schemas, registry


def required_at_top(schema, schemas):
    """The properties the schema requires at the top, following a top-level allOf/$ref."""
    names = list(schema.get("required", []))
    for part in schema.get("allOf", []):
        ref = part.get("$ref")
        if ref:
            target = next(s for s in schemas.values() if s["$id"] == ref)
            names += required_at_top(target, schemas)
        names += part.get("required", [])
    return sorted(set(names))


def main(argv):
    every = "--every-schema" in argv
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__)
        return 2
    schemas, registry = load_schemas()
    failures, used, count = [], set(), 0
    for path in sorted(pathlib.Path(args[0]).glob("*__*.json")):
        name = path.name.split("__", 1)[0]
        schema = schemas.get(name)
        if schema is None:
            failures.append(f"{path.name}: no schema {name}.schema.json")
            continue
        used.add(name)
        count += 1
        doc = json.loads(path.read_text(encoding="utf-8"))
        validator = jsonschema.Draft202012Validator(schema, registry=registry)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for error in errors[:10]:
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            failures.append(f"{path.name}: at {where}: {error.message[:300]}")
        required = required_at_top(schema, schemas)
        if not required:
            failures.append(f"{path.name}: {name} requires nothing at the top")
        for field in required:
            cut = {k: v for k, v in doc.items() if k != field}
            if validator.is_valid(cut):
                failures.append(f"{path.name}: still valid without required {field!r}")
        print(f"{'FAIL' if errors else 'ok  '} {path.name} ({name}, {len(required)} required at the top)")
    if every:
        for name in sorted(set(schemas) - used):
            failures.append(f"{name}.schema.json: no document validated against it")
    for failure in failures:
        print(f"error: {failure}")
    if failures:
        print(f"{count} document(s), {len(failures)} failure(s)")
        return 1
    print(f"{count} document(s) valid against {len(used)} schema(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
