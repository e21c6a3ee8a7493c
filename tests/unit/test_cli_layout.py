"""The command line is a thin top layer: nothing below imports it, each shared option is
declared once (in `arbiter/cli/options.py`), and its modules stay short."""

from __future__ import annotations

import ast

from paths import ROOT

PACKAGE = ROOT / "arbiter"
CLI = PACKAGE / "cli"
# Options that more than one command takes: declared in options.py alone.
SHARED = {
    "--variant",
    "--engines",
    "--json",
    "--quiet",
    "--strict",
    "--force",
    "--fresh",
    "--rebuilt",
    "--concurrency",
    "--dask",
    "--seed",
    "--sandbox",
    "--transcripts",
    "--records",
    "--prior",
    "--anchor",
    "--log",
    "--verbose",
    "--example",
    "--tc",
    "--size",
    "--islands",
    "--pie/--no-pie",
}


def imported(tree: ast.AST, module: str) -> set[str]:
    """The absolute names `tree` (the module `module`) imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.rsplit(".", node.level)[0]
                base = f"{parent}.{base}" if base else parent
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


def test_nothing_below_the_command_line_imports_it() -> None:
    upward = []
    for path in PACKAGE.rglob("*.py"):
        if CLI in path.parents or path.name == "__main__.py":
            continue
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        names = imported(ast.parse(path.read_text(encoding="utf-8")), module)
        upward += [
            f"{path}: {n}" for n in names if n == "arbiter.cli" or n.startswith("arbiter.cli.")
        ]
    assert upward == []


def test_a_shared_option_is_declared_once() -> None:
    """No command module declares a shared option itself, under any of its names
    (`click.option("-q", "--quiet")` names --quiet as its second argument)."""
    declared = []
    for path in CLI.glob("*.py"):
        if path.name == "options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "option"
            ):
                names = {a.value for a in node.args if isinstance(a, ast.Constant)}
                for name in sorted(names & SHARED):
                    declared.append(f"{path.name}:{node.lineno} {name}")
    assert declared == []


def test_the_command_line_modules_stay_short() -> None:
    long = {p.name: n for p in CLI.glob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}
