"""The sandbox is written from the boards' documents, apart from what it checks: no module of
it imports the product code that decides what to send (a check sharing code with what it
checks proves nothing)."""

from __future__ import annotations

import ast
from pathlib import Path

import jobpost_dev.sandbox

FORBIDDEN = ("consumers", "listing", "producer_api")


def test_no_module_of_the_sandbox_imports_the_adapters_the_rules_or_the_api():
    root = Path(jobpost_dev.sandbox.__file__).parent
    modules = sorted(root.rglob("*.py"))
    found = []
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{module.relative_to(root)}: {name}" for name in names if name.split(".")[0] in FORBIDDEN
            ]
    assert len(modules) > 10 and found == []
