"""The import graph of service/: no module imports itself back through others, and no package
reaches up into one that builds on it.

Every import statement counts, those inside functions too: an import deferred to call time
still ties the two modules together. `PYTHONPATH=. .venv/bin/python tests/unit/test_imports.py` prints
the cycles.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from service.config import PROJECT_ROOT, Settings
from service.deliveries import delivery_kinds
from service.models import OutboundDelivery

SERVICE = PROJECT_ROOT / "service"
# Cycles that came in with work still under way, left to their owners; an entry goes once its
# cycle does (the test says so).
KNOWN_CYCLES: list[list[str]] = []


def service_modules() -> dict[str, Path]:
    """Dotted name -> file of every module under service/ (a package by its __init__.py)."""
    modules = {}
    for path in sorted(SERVICE.rglob("*.py")):
        parts = list(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the service modules it imports (`from package import module` names the module)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                graph[name].update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        graph[name].add(f"{target}.{alias.name}")
                    elif target in modules:
                        graph[name].add(target)
        graph[name].discard(name)
    return graph


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph by service's top-level parts: service.outbound, service.lti, service.auth…"""
    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {part(name): set() for name in graph}
    for name, targets in graph.items():
        packages[part(name)].update(part(t) for t in targets if part(t) != part(name))
    return packages


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle, each once, starting at its smallest name."""
    found: list[list[str]] = []
    nodes = sorted(graph)
    for index, start in enumerate(nodes):
        _walk(graph, start, set(nodes[index:]), [start], found)
    return found


def _walk(graph: dict[str, set[str]], start: str, allowed: set[str], path: list[str], found: list[list[str]]) -> None:
    """Follow every edge out of the path's last node: back to `start` is a cycle, on to an allowed
    node not on the path goes deeper."""
    for target in sorted(graph[path[-1]]):
        if target == start:
            found.append(list(path))
        elif target in allowed and target not in path:
            path.append(target)
            _walk(graph, start, allowed, path, found)
            path.pop()


def described(found: list[list[str]]) -> str:
    return "\n".join(" -> ".join(cycle + cycle[:1]) for cycle in found)


def test_no_module_of_service_imports_itself_back():
    found = cycles(import_graph(service_modules()))
    new = [cycle for cycle in found if cycle not in KNOWN_CYCLES]
    assert not new, f"import cycles:\n{described(new)}"
    gone = [cycle for cycle in KNOWN_CYCLES if cycle not in found]
    assert not gone, f"no longer a cycle, take it off KNOWN_CYCLES:\n{described(gone)}"


def test_no_package_of_service_reaches_back_into_one_that_imports_it():
    found = cycles(package_graph(import_graph(service_modules())))
    assert not found, f"package cycles:\n{described(found)}"


def test_outbound_imports_nothing_that_builds_on_it():
    """service/outbound/ sends what it is given: the kinds (LTI passbacks, webhooks) come from
    where it is started, service/deliveries.py."""
    above = ("service.lti", "service.services", "service.resources", "service.jobs", "service.deliveries",
             "service.cli", "service.grading", "service.catalog")
    graph = import_graph(service_modules())
    reached = {(name, target) for name, targets in graph.items() if name.startswith("service.outbound")
               for target in targets if target.startswith(above)}
    assert not reached, sorted(reached)


def test_the_runner_is_started_with_a_kind_for_every_delivery_table():
    settings = Settings.from_env({}, env="testing")
    kinds = delivery_kinds(settings)
    assert {kind.model for kind in kinds} == set(OutboundDelivery.__subclasses__())
    assert len(kinds) == len({kind.model for kind in kinds})


def test_the_graph_sees_a_deferred_import(tmp_path):
    """The reader counts imports inside functions and relative imports of modules."""
    package = tmp_path / "service"
    (package / "outbound").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "outbound" / "__init__.py").write_text("")
    (package / "outbound" / "runner.py").write_text("def kinds():\n    from ..lti import passback\n")
    (package / "lti").mkdir()
    (package / "lti" / "__init__.py").write_text("")
    (package / "lti" / "passback.py").write_text("from ..outbound.runner import kinds\n")
    modules = {name: package.parent / path.relative_to(SERVICE.parent)
               for name, path in {"service.outbound.runner": SERVICE / "outbound" / "runner.py",
                                  "service.lti.passback": SERVICE / "lti" / "passback.py",
                                  "service.outbound": SERVICE / "outbound" / "__init__.py",
                                  "service.lti": SERVICE / "lti" / "__init__.py"}.items()}
    found = cycles(import_graph(modules))
    assert found == [["service.lti.passback", "service.outbound.runner"]]


if __name__ == "__main__":
    module_graph = import_graph(service_modules())
    for title, graph in (("modules", module_graph), ("packages", package_graph(module_graph))):
        found = cycles(graph)
        print(f"{len(found)} import cycles among service/'s {title}")
        if found:
            print(described(found))
    sys.exit(0)
