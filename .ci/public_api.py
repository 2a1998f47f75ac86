#!/usr/bin/env python3
"""The crate's public API as a sorted list of items, compared with the committed list.

Until the crate is published there is no baseline for cargo-semver-checks; this is the next
best thing: every public item reachable from the crate root (modules, re-exports, structs and
their public fields, enums and their variants, traits, functions, methods, constants, type
aliases, trait implementations) with its `#[non_exhaustive]` mark, one per line, from rustdoc's
JSON output (nightly rustdoc, default features: what a crates.io user gets). A change to the
list is a change of the public API: deliberate ones are committed with the regenerated list,
so that every API change shows in review as a diff of `public-api.txt`.

    python3 .ci/public_api.py            # compare with public-api.txt; exit 1 on a difference
    python3 .ci/public_api.py --write    # regenerate public-api.txt after an intended change
    python3 .ci/public_api.py --json F   # list from an existing rustdoc JSON file F

Function signatures and field types are not compared (rustdoc's type JSON is large and its
format changes between nightlies); names, kinds, fields, variants, trait impls and
`#[non_exhaustive]` are.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "public-api.txt"
CRATE = "mm2_offsets"
REGENERATE = "python3 .ci/public_api.py --write"


def rustdoc_json() -> dict:
    target = Path(os.environ.get("MM2O_API_TARGET_DIR", ROOT / "target" / "public-api"))
    env = dict(os.environ, CARGO_TARGET_DIR=str(target), RUSTDOCFLAGS="")
    subprocess.run(
        ["cargo", "+nightly", "rustdoc", "-q", "--lib", "--",
         "-Z", "unstable-options", "--output-format", "json"],
        cwd=ROOT, env=env, check=True,
    )
    return json.loads((target / "doc" / f"{CRATE}.json").read_text())


def inner_of(item: dict):
    inner = item.get("inner")
    if isinstance(inner, dict) and len(inner) == 1:
        return next(iter(inner.items()))
    return (str(inner), {})


def non_exhaustive(item: dict) -> bool:
    return any("non_exhaustive" in json.dumps(a) for a in item.get("attrs", []))


def trait_name(trait) -> str:
    if not trait:
        return ""
    return trait.get("path") or trait.get("name") or "?"


class Lister:
    def __init__(self, doc: dict):
        self.index = doc["index"]
        self.root = str(doc["root"])
        self.lines = set()
        self.seen_modules = set()

    def item(self, id_):
        return self.index.get(str(id_)) if id_ is not None else None

    def add(self, kind: str, path: str, item: dict | None = None):
        mark = " #[non_exhaustive]" if item is not None and non_exhaustive(item) else ""
        self.lines.add(f"{kind} {path}{mark}")

    def module(self, id_, path: str):
        if (id_, path) in self.seen_modules:
            return
        self.seen_modules.add((id_, path))
        item = self.item(id_)
        _, module = inner_of(item)
        for child_id in module.get("items", []):
            child = self.item(child_id)
            if child is None:
                continue
            self.member(child_id, child, path)

    def member(self, id_, item: dict, path: str):
        kind, inner = inner_of(item)
        if kind == "use":
            if inner.get("is_glob"):
                target = self.item(inner.get("id"))
                if target is not None and inner_of(target)[0] == "module":
                    self.module(inner.get("id"), path)
                else:
                    self.add("use", f"{path}::{inner.get('source')}::*")
                return
            name = inner.get("name")
            target = self.item(inner.get("id"))
            if path == f"{CRATE}::prelude":
                # The prelude only re-exports: one line per name, the item listed at its path.
                self.add("use", f"{path}::{name} = {inner.get('source')}")
                return
            if target is None:
                # A re-export of another crate's item.
                self.add("use", f"{path}::{name} = {inner.get('source')}")
                return
            self.member(inner.get("id"), dict(target, name=name), path)
            return
        name = item.get("name")
        if name is None:
            return
        full = f"{path}::{name}"
        if kind == "module":
            self.add("mod", full, item)
            self.module(id_, full)
        elif kind == "struct":
            self.add("struct", full, item)
            fields = inner.get("kind", {})
            if isinstance(fields, dict):
                plain = fields.get("plain")
                if plain is not None:
                    self.fields(plain.get("fields", []), full)
                tuple_fields = fields.get("tuple")
                if tuple_fields is not None:
                    for i, f in enumerate(tuple_fields):
                        if f is not None:
                            self.add("field", f"{full}::{i}")
            self.impls(inner.get("impls", []), full)
        elif kind == "union":
            self.add("union", full, item)
            self.fields(inner.get("fields", []), full)
            self.impls(inner.get("impls", []), full)
        elif kind == "enum":
            self.add("enum", full, item)
            for v_id in inner.get("variants", []):
                variant = self.item(v_id)
                if variant is None:
                    continue
                vpath = f"{full}::{variant['name']}"
                self.add("variant", vpath, variant)
                _, v = inner_of(variant)
                vkind = v.get("kind")
                if isinstance(vkind, dict) and "struct" in vkind:
                    self.fields(vkind["struct"].get("fields", []), vpath)
                elif isinstance(vkind, dict) and "tuple" in vkind:
                    for i, f in enumerate(vkind["tuple"]):
                        if f is not None:
                            self.add("field", f"{vpath}::{i}")
            self.impls(inner.get("impls", []), full)
        elif kind == "trait":
            self.add("trait", full, item)
            for t_id in inner.get("items", []):
                t = self.item(t_id)
                if t is not None:
                    self.add(f"trait-{inner_of(t)[0]}", f"{full}::{t.get('name')}")
        elif kind == "function":
            self.add("fn", full, item)
        elif kind in ("constant", "static", "type_alias", "macro", "proc_macro", "trait_alias"):
            self.add(kind.replace("_", "-"), full, item)
        else:
            self.add(kind, full, item)

    def fields(self, ids, path: str):
        for f_id in ids:
            f = self.item(f_id)
            if f is not None and f.get("visibility") == "public":
                self.add("field", f"{path}::{f['name']}")

    def impls(self, ids, path: str):
        for i_id in ids:
            imp = self.item(i_id)
            if imp is None:
                continue
            _, inner = inner_of(imp)
            if inner.get("is_synthetic") or inner.get("blanket_impl") is not None:
                continue
            trait = trait_name(inner.get("trait"))
            # A compiler-internal marker of derived PartialEq, not a trait a user names.
            if trait == "StructuralPartialEq":
                continue
            if trait:
                self.add("impl", f"{path}: {trait}")
                continue
            for m_id in inner.get("items", []):
                m = self.item(m_id)
                if m is None or m.get("visibility") != "public":
                    continue
                self.add(f"{inner_of(m)[0].replace('function', 'method')}", f"{path}::{m['name']}", m)


def listing(doc: dict) -> list[str]:
    lister = Lister(doc)
    lister.module(lister.root, CRATE)
    return sorted(lister.lines)


def main(argv: list[str]) -> int:
    if "--json" in argv:
        doc = json.loads(Path(argv[argv.index("--json") + 1]).read_text())
    else:
        doc = rustdoc_json()
    lines = listing(doc)
    text = "".join(f"{line}\n" for line in lines)
    counts = (len(lines), sum("#[non_exhaustive]" in line for line in lines))
    if "--write" in argv:
        LIST.write_text(text)
        print(f"[public-api] wrote {LIST.name}: {counts[0]} items, {counts[1]} #[non_exhaustive]")
        return 0
    if "--print" in argv:
        sys.stdout.write(text)
        return 0
    committed = LIST.read_text().splitlines() if LIST.exists() else []
    removed = sorted(set(committed) - set(lines))
    added = sorted(set(lines) - set(committed))
    if not removed and not added:
        print(f"[public-api] unchanged: {counts[0]} items, {counts[1]} #[non_exhaustive]")
        return 0
    for line in removed:
        print(f"- {line}")
    for line in added:
        print(f"+ {line}")
    print(
        f"[public-api] the public API differs from {LIST.name} ({len(removed)} removed, "
        f"{len(added)} added). Removing or changing an item breaks users of the crate. If the "
        f"change is intended, regenerate the list with `{REGENERATE}`, commit it, and say so in "
        f"CHANGELOG.md."
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
