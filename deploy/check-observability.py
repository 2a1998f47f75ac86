#!/usr/bin/env python3
"""Checks deploy/'s Grafana dashboard and Prometheus rules against a real /metrics exposition.

    python3 deploy/check-observability.py METRICS_FILE [DASHBOARD_JSON] [RULES_YAML]

- rules: the structure promtool checks (groups with unique names, each rule exactly one of
  alert/record, a parsable expr, valid `for`/`keep_firing_for` durations, string labels and
  annotations, alert names unique within a group);
- every PromQL expression (rules, panel targets, template variable queries) parses, after
  Grafana's variables are substituted;
- every metric name an expression selects is in METRICS_FILE (a scrape of a running `watch`
  with --partition-metrics, --apply-interval and a source connection, so that every family is
  present).

Needs PyYAML and promql-parser (`pip install pyyaml promql-parser`: the Python bindings of
GreptimeTeam's Rust PromQL parser). Prints what it checked; exits 1 on any problem.
"""

import json
import re
import sys
from pathlib import Path

import promql_parser
import yaml

HERE = Path(__file__).resolve().parent


def exposition_names(text):
    """Metric names of a text exposition: from TYPE lines and sample lines."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def selectors(node, out):
    """Every metric name a parsed expression selects (walks the tree by its node types)."""
    if isinstance(node, promql_parser.VectorSelector):
        name = node.name
        if not name:
            for m in node.matchers.matchers:
                if m.name == "__name__":
                    name = m.value
        out.append(name)
        return
    if isinstance(node, promql_parser.MatrixSelector):
        selectors(node.vector_selector, out)
    elif isinstance(node, promql_parser.BinaryExpr):
        selectors(node.lhs, out)
        selectors(node.rhs, out)
    elif isinstance(node, promql_parser.Call):
        for arg in node.args:
            selectors(arg, out)
    elif isinstance(node, promql_parser.AggregateExpr):
        selectors(node.expr, out)
        if node.param is not None:
            selectors(node.param, out)
    elif isinstance(
        node, (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)
    ):
        selectors(node.expr, out)


GRAFANA_VARIABLES = [
    (r"\$__rate_interval|\$__interval|\$\{__rate_interval\}|\$\{__interval\}", "5m"),
    (r"\$__range|\$\{__range\}", "1h"),
    (r"\$\{[A-Za-z0-9_]+(:[a-z]+)?\}|\$[A-Za-z0-9_]+|\[\[[A-Za-z0-9_]+\]\]", ".*"),
]


def grafana_exprs(dashboard):
    """(where, expr) of every panel target (rows' panels too) and template query."""
    found = []

    def panels(items):
        for p in items:
            for t in p.get("targets", []):
                if t.get("expr"):
                    found.append((f"panel {p.get('title')!r} target {t.get('refId')}", t["expr"]))
            panels(p.get("panels", []))

    panels(dashboard.get("panels", []))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*", q or "")
        if m:
            found.append((f"variable {v['name']}", m.group(1)))
        elif q:
            found.append((f"variable {v['name']}", q))
    return found


DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")


def rule_exprs(rules, problems):
    """(where, expr) of every rule, after checking the rule file's structure."""
    found = []
    if set(rules) != {"groups"}:
        problems.append(f"rules: top-level keys {sorted(rules)}, want only 'groups'")
    seen = set()
    for g in rules.get("groups", []):
        name = g.get("name")
        if not name or name in seen:
            problems.append(f"rules: group name {name!r} missing or repeated")
        seen.add(name)
        unknown = set(g) - {"name", "interval", "rules", "limit", "query_offset", "labels"}
        if unknown:
            problems.append(f"rules: group {name}: unknown keys {sorted(unknown)}")
        alerts = set()
        for i, r in enumerate(g.get("rules", [])):
            where = f"group {name} rule {i} ({r.get('alert') or r.get('record')})"
            if ("alert" in r) == ("record" in r):
                problems.append(f"{where}: needs exactly one of alert and record")
            allowed = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
            if set(r) - allowed:
                problems.append(f"{where}: unknown keys {sorted(set(r) - allowed)}")
            if "record" in r and ({"for", "keep_firing_for", "annotations"} & set(r)):
                problems.append(f"{where}: a recording rule takes no for/annotations")
            if "alert" in r:
                if r["alert"] in alerts:
                    problems.append(f"{where}: alert name repeated in the group")
                alerts.add(r["alert"])
            for key in ("for", "keep_firing_for"):
                if key in r and not DURATION.match(str(r[key])):
                    problems.append(f"{where}: {key} {r[key]!r} is not a duration")
            for key in ("labels", "annotations"):
                m = r.get(key, {})
                if not isinstance(m, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in m.items()
                ):
                    problems.append(f"{where}: {key} must map strings to strings")
            if not isinstance(r.get("expr"), str) or not r["expr"].strip():
                problems.append(f"{where}: no expr")
            else:
                found.append((where, r["expr"]))
    return found


def main(argv):
    if len(argv) not in (2, 3, 4):
        sys.exit(__doc__)
    metrics = Path(argv[1]).read_text()
    dashboard_path = Path(argv[2]) if len(argv) > 2 else HERE / "grafana-dashboard.json"
    rules_path = Path(argv[3]) if len(argv) > 3 else HERE / "prometheus-rules.yml"
    exported = exposition_names(metrics)
    problems = []
    exprs = grafana_exprs(json.loads(dashboard_path.read_text()))
    dashboard_count = len(exprs)
    exprs += rule_exprs(yaml.safe_load(rules_path.read_text()), problems)
    used = set()
    for where, expr in exprs:
        text = expr
        for pattern, value in GRAFANA_VARIABLES:
            text = re.sub(pattern, value, text)
        try:
            tree = promql_parser.parse(text)
        except ValueError as e:
            problems.append(f"{where}: does not parse: {e}\n    {expr}")
            continue
        names = []
        selectors(tree, names)
        if not names:
            problems.append(f"{where}: selects no metric: {expr}")
        for name in names:
            used.add(name)
            if name not in exported:
                problems.append(f"{where}: {name!r} is not in the exposition")
    print(
        f"checked {dashboard_count} dashboard and {len(exprs) - dashboard_count} rule "
        f"expressions: {len(used)} metrics used, all of {len(exported)} exported names known"
        if not problems
        else f"{len(problems)} problem(s):"
    )
    for p in problems:
        print(f"  {p}")
    print("metrics used: " + ", ".join(sorted(used)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
