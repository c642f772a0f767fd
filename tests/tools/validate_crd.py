"""Validates YAML documents against a CustomResourceDefinition's OpenAPI v3 schema.

usage: validate_crd.py CRD.yaml VERSION DOCUMENT.yaml...

The API server prunes fields a structural schema does not name, and `kubectl apply
--validate=strict` refuses them; this does the same by adding `additionalProperties: false`
to every object schema that lists its properties and allows nothing else. Exit 0 when every
document is valid, 1 with each error (path and message) on stderr otherwise.
"""

import sys

import jsonschema
import yaml


def strict(schema):
    """The schema with unknown properties refused wherever it lists the known ones."""
    if isinstance(schema, dict):
        schema = {key: strict(value) for key, value in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [strict(value) for value in schema]
    return schema


def main(crd_path, version, documents):
    with open(crd_path) as f:
        crd = yaml.safe_load(f)
    kind = crd["spec"]["names"]["kind"]
    group = crd["spec"]["group"]
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    schema = strict(versions[version]["schema"]["openAPIV3Schema"])
    # metadata is `type: object` in a CRD; the API server checks it as ObjectMeta.
    schema["properties"]["metadata"] = {"type": "object"}
    validator = jsonschema.Draft7Validator(schema)
    failed = False
    for path in documents:
        with open(path) as f:
            doc = yaml.safe_load(f)
        if doc.get("apiVersion") != f"{group}/{version}" or doc.get("kind") != kind:
            print(f"{path}: not a {kind} of {group}/{version}", file=sys.stderr)
            failed = True
            continue
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            where = "/".join(str(p) for p in error.path) or "(root)"
            print(f"{path}: {where}: {error.message}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
