"""One direction of imports (DESIGN.md's layout table), checked on the source: every `kernelcast.*`
import of each package, top level or inside a function."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: package folder -> the kernelcast packages it may import (besides itself)
MAY_IMPORT = {"features": set(), "collect": {"features"}, "predictors": {"features"},
              "training": {"features", "predictors"}}


def _kernelcast_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        out |= {n.split(".")[1] for n in names if n.startswith("kernelcast.")}
        out |= {"kernelcast" for n in names if n == "kernelcast"}      # the face itself: a bare `import kernelcast`
    return out


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_imports_follow_the_layout_table(package):
    bad = {}
    for path in sorted((REPO / package).rglob("*.py")):
        wrong = _kernelcast_imports(path) - MAY_IMPORT[package] - {package}
        if wrong:
            bad[str(path.relative_to(REPO))] = sorted(wrong)
    assert not bad, f"{package}/ may import only {sorted(MAY_IMPORT[package]) or 'nothing of ours'}: {bad}"
