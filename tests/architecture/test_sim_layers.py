"""sim's layers (pyproject's "sim's layers" import-linter contract), checked with grimp: no
module imports from a layer above its own, lazy imports inside functions included, so no import
circle runs between sim's subpackages, nor between any two of its modules; every sim module sits in a layer; the algorithm registry
reaches sim.nccl through its plugin hook only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_INITS = {"sim", "sim.hardware"}  # package files that only name their modules: in no layer


def _layers() -> list[list[tuple[str, bool]]]:
    """The contract's layers, top first: each a list of (module, independent)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith("sim's layers"))
    assert contract["type"] == "layers" and contract["ignore_imports"] == []
    layers = []
    for text in contract["layers"]:
        independent = ":" not in text
        layers.append([(name.strip(), independent) for name in text.replace(":", "|").split("|")])
    return layers


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("sim", cache_dir=None)


def _unit_of(module: str, units: dict[str, tuple[int, bool]]) -> str | None:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if name in units:
            return name
    return None


def _units() -> dict[str, tuple[int, bool]]:
    return {name: (level, independent) for level, layer in enumerate(_layers()) for name, independent in layer}


def _unit_imports(graph) -> list[tuple[str, str, str, str]]:
    """(importer, imported, importer's unit, imported's unit) for every import between two units."""
    units = _units()
    found = []
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = _unit_of(importer, units), _unit_of(imported, units)
            if a and b and a != b:
                found.append((importer, imported, a, b))
    return found


def test_no_sim_module_imports_from_a_layer_above_its_own(graph):
    """algorithms/registry.py imported NCCL's data path from hardware/, which imported algorithms/
    (a 25-module circle with collective/, scenario.py and fields.py): each layer now imports down only."""
    units = _units()
    upward = [f"{a} -> {b}" for a, b, ua, ub in _unit_imports(graph) if units[ub][0] < units[ua][0]]
    assert upward == []


def test_independent_siblings_do_not_import_each_other(graph):
    units = _units()
    across = [f"{a} -> {b}" for a, b, ua, ub in _unit_imports(graph) if units[ua][0] == units[ub][0] and units[ua][1]]
    assert across == []


def test_no_import_circle_between_sim_layers(graph):
    """Siblings joined by ':' may import each other; every other import between two of sim's
    layer entries goes down, so the graph of entries, siblings merged, has no cycle."""
    units = _units()
    merged = nx.DiGraph()
    for _, _, ua, ub in _unit_imports(graph):
        merged.add_edge(units[ua][0], units[ub][0])
    merged.remove_edges_from([(a, b) for a, b in merged.edges if a == b])
    assert nx.is_directed_acyclic_graph(merged), nx.find_cycle(merged)


def test_every_sim_module_sits_in_a_layer(graph):
    """A new subpackage or module cannot sit outside the contract (and so outside its checks)."""
    units = _units()
    outside = sorted(m for m in graph.modules if _unit_of(m, units) is None and m not in PACKAGE_INITS)
    assert outside == []


def test_the_registry_reaches_nccl_through_its_plugin_hook_only(graph):
    """sim.algorithms imports nothing of sim.nccl; the registry's PLUGINS names it, and its first
    query (in a fresh interpreter) registers NCCL's algorithms."""
    assert not graph.chain_exists(importer="sim.algorithms", imported="sim.nccl", as_packages=True)
    code = (
        "import sys\nfrom sim.algorithms import registry\nassert 'sim.nccl' not in sys.modules\n"
        "assert registry.PLUGINS == ('sim.algorithms', 'sim.nccl')\n"
        "assert 'nccl_ring' in registry.algorithms_for('all_reduce', unlisted=True)\n"
        "assert 'nccl_p2p' in registry.algorithms_for('all_to_all', unlisted=True)\nassert 'sim.nccl' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_no_import_circle_between_any_two_sim_modules(graph):
    """Issue 32: inside one package too, no module imports (at the top, in a function or for type
    checking) a module that imports it back, directly or through others. Four circles were left
    inside packages: ddp <-> ddp_result <-> ddp_sweep and fsdp <-> fsdp_result (the shared types
    now live in ddp_plan and fsdp_scenario), collective.frames <-> runner (frames builds on the
    runner) and hardware.cluster <-> presets (NIC variants live with the presets that load them)."""
    modules = nx.DiGraph()
    modules.add_nodes_from(graph.modules)
    modules.add_edges_from(
        (importer, imported) for importer in graph.modules for imported in graph.find_modules_directly_imported_by(importer)
    )
    circles = [sorted(circle) for circle in nx.strongly_connected_components(modules) if len(circle) > 1]
    assert circles == []
    assert not any(modules.has_edge(module, module) for module in modules)  # a module importing itself


# Modules that import others by name (importlib), which grimp cannot see, and what they reach:
# sim/__init__ (the public names, first use; no sim module imports sim itself), sim.cli (its
# lazy commands; none imports sim.cli), sim.cli_fields (an option's listing: the registry's ops),
# sim.algorithms.registry (PLUGINS: sim.nccl, which imports the registry back: the plugin hook)
# and sim.fields.field_info (the scenario dataclasses' defaults: sim.scenario and
# sim.training.ddp_scenario, which import sim.fields back).
BY_NAME = {"sim", "sim.algorithms.registry", "sim.cli", "sim.cli_fields", "sim.fields"}


def test_only_the_known_modules_import_by_name():
    """An import by name is an edge the circle and layer checks above miss: a new one is
    reviewed here (and added to BY_NAME with what it reaches) rather than slipping past."""
    found = set()
    for path in (ROOT / "sim").rglob("*.py"):
        text = path.read_text()
        if "import_module(" in text or "__import__(" in text:
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found.add(module.removesuffix(".__init__"))
    assert found == BY_NAME
