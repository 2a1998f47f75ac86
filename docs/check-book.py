#!/usr/bin/env python3
"""Checks the book without building it: every page SUMMARY.md names exists, every page in
src/ is named by SUMMARY.md, and every relative link in the book and the README points to a
file that exists, and to a heading of it when it names an anchor (mdBook's and GitHub's anchor
rule: lower case, punctuation dropped, spaces as hyphens). Exit 1 with every broken link listed.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "docs" / "src"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    out, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
            out.add(slug)
    return out


def links(path):
    fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            yield number, target


def main():
    errors = []
    summary = SRC / "SUMMARY.md"
    named = set()
    for _, target in links(summary):
        named.add((SRC / target).resolve())
    pages = {p.resolve() for p in SRC.rglob("*.md")} - {summary.resolve()}
    for page in sorted(pages - named):
        errors.append(f"{page.relative_to(ROOT)}: not in SUMMARY.md")
    for page in sorted(named - pages):
        errors.append(f"SUMMARY.md names {page.relative_to(ROOT)}, which does not exist")
    for page in sorted(pages | {summary.resolve(), (ROOT / "README.md").resolve()}):
        for number, target in links(page):
            if re.match(r"^[a-z]+:", target):
                continue  # an absolute URL: not checked offline
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            where = f"{page.relative_to(ROOT)}:{number}: {target}"
            if not dest.exists():
                errors.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                errors.append(f"{where}: no heading #{anchor}")
    for error in errors:
        print(error)
    print(f"book: {len(pages)} pages, {len(errors)} broken link(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
