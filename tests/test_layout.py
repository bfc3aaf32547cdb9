"""One direction of imports (DESIGN.md's layout table), checked on the source: every `kernelcast.*`
import of each package, top level or inside a function."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: package folder -> the kernelcast packages it may import (besides itself)
MAY_IMPORT = {
    "features": set(),
    "collect": {"features"},
    "predictors": {"features"},
    "training": {"features", "predictors"},
    "graphs": {"features", "predictors"},
    "pipeline": {"features", "collect", "predictors", "training", "graphs"},
}


def _kernelcast_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        out |= {n.split(".")[1] for n in names if n.startswith("kernelcast.")}
        out |= {"kernelcast" for n in names if n == "kernelcast"}  # the face itself: a bare `import kernelcast`
    return out


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_imports_follow_the_layout_table(package):
    bad = {}
    for path in sorted((REPO / package).rglob("*.py")):
        wrong = _kernelcast_imports(path) - MAY_IMPORT[package] - {package}
        if wrong:
            bad[str(path.relative_to(REPO))] = sorted(wrong)
    assert not bad, f"{package}/ may import only {sorted(MAY_IMPORT[package]) or 'nothing of ours'}: {bad}"


#: third-party packages a package may never import (the collector runs on GPU hosts without them)
FORBIDDEN = {"collect": {"xgboost", "mlflow", "torch_geometric"}, "features": {"xgboost", "mlflow", "torch_geometric"}}


def _third_party(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_collector_and_features_never_import_training_libraries(package):
    bad = {
        str(p.relative_to(REPO)): sorted(_third_party(p) & FORBIDDEN[package])
        for p in sorted((REPO / package).rglob("*.py"))
        if _third_party(p) & FORBIDDEN[package]
    }
    assert not bad, f"{package}/ must not import {sorted(FORBIDDEN[package])}: {bad}"
