"""Every distribution is releasable together with the others: pins, license, metadata."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.version import Version

import offprompt

ROOT = Path(__file__).resolve().parents[1]
# The core and every adapter under integrations/ (a new one is checked without being listed).
PROJECTS = {
    tomllib.loads(path.read_text(encoding="utf-8"))["project"]["name"]: path
    for path in [ROOT / "pyproject.toml", *sorted(ROOT.glob("integrations/*/pyproject.toml"))]
}
OURS = set(PROJECTS)


def test_every_adapter_is_found_and_built_by_dist_check() -> None:
    assert len(PROJECTS) >= 6, sorted(PROJECTS)
    dists = (
        next(
            line
            for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
            if line.startswith("DISTS :=")
        )
        .split(":=")[1]
        .split()
    )
    assert sorted(dists) == sorted(
        "." if path.parent == ROOT else str(path.parent.relative_to(ROOT))
        for path in PROJECTS.values()
    )


def project(name: str) -> dict:
    return tomllib.loads(PROJECTS[name].read_text(encoding="utf-8"))["project"]


def compatible_pin() -> str:
    """``~=X.Y.0`` of the core's version: the same minor, any patch (0.x minors may break)."""
    version = Version(offprompt.__version__)
    return f"~={version.major}.{version.minor}.0"


@pytest.mark.parametrize("name", sorted(OURS - {"offprompt"}))
def test_each_adapter_pins_our_distributions_to_the_core_minor(name: str) -> None:
    pins = {
        req.name: req for req in map(Requirement, project(name)["dependencies"]) if req.name in OURS
    }
    assert "offprompt" in pins, f"{name} does not depend on offprompt"
    version = Version(offprompt.__version__)
    for req in pins.values():
        assert str(req.specifier) == compatible_pin(), (
            f"{name}: {req} should be {req.name}{compatible_pin()}"
        )
        assert req.specifier.contains(version)
        assert not req.specifier.contains(Version(f"{version.major}.{version.minor + 1}.0"))


def test_the_pin_check_follows_the_version() -> None:
    # the expected pin is computed from offprompt.__version__, not written down
    version = Version(offprompt.__version__)
    assert compatible_pin() == f"~={version.major}.{version.minor}.0"
    assert Requirement("offprompt" + compatible_pin()).specifier.contains(version)


@pytest.mark.parametrize("name", sorted(OURS))
def test_metadata_a_registry_page_needs(name: str) -> None:
    meta = project(name)
    folder = PROJECTS[name].parent
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert (folder / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert (folder / meta["readme"]).is_file()
    assert meta["authors"] and meta["keywords"] and meta["urls"]["Source"]
    assert (
        "License :: OSI Approved :: MIT License" not in meta["classifiers"]
    )  # PEP 639: the expression only
    assert meta["requires-python"] == project("offprompt")["requires-python"]
    build = tomllib.loads(PROJECTS[name].read_text(encoding="utf-8"))["build-system"]
    assert build["requires"] == [
        "hatchling>=1.27"
    ]  # the first hatchling with PEP 639 license-files


def test_mypy_checks_the_lowest_python_we_declare() -> None:
    lowest = project("offprompt")["requires-python"].removeprefix(">=")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["mypy"]["python_version"] == lowest
    ini = (ROOT / "integrations/mypy.ini").read_text(encoding="utf-8")
    assert f"python_version = {lowest}\n" in ini
