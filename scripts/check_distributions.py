"""Check what would be published: the built distributions, each installed alone.

``make dist-check`` builds the nine distributions of its ``DISTS`` into ``dist/``
(``python -m build``), runs ``twine check --strict`` on them, then runs this script, which

1. checks that the core's sdist holds only the core (no ``integrations/``,
   ``benchmarks/``, ``tests/``, ``docs/``), and that every adapter pins the core's minor;
2. for each of ``SCENARIOS`` (``offprompt``, ``offprompt[mcp]`` and each adapter but
   the demo): makes an EMPTY virtualenv, installs the built wheel (the
   core from ``dist/`` too, never the checkout; dependencies from the package index) and
   runs the first Python example of that distribution's README there, in an empty
   directory, so nothing of the checkout can be imported. ``offprompt[mcp]`` also starts
   ``offprompt mcp serve`` and lists its tools with the SDK's own stdio client.

Any failure prints what failed and exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
# The core's sdist may hold these top-level entries and nothing else.
CORE_SDIST_ALLOWED = {
    "src",
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "pyproject.toml",
    "PKG-INFO",
    ".gitignore",
}

MCP_CLIENT = """
import asyncio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    # No env=: the SDK starts the server with its own minimal environment, as clients do.
    params = StdioServerParameters(command=sys.argv[1], args=["--home", sys.argv[2], "mcp", "serve"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = sorted(tool.name for tool in (await session.list_tools()).tools)
    assert "query_memory" in names, names
    print("offprompt mcp serve tools:", ", ".join(names))

asyncio.run(main())
"""


class CheckFailed(Exception):
    """A distribution is not what would be published."""


@dataclass(frozen=True)
class Scenario:
    """One clean install: what to install and which README's example to run there."""

    name: str
    requirement: str  # the wheel's distribution name, with extras
    readme: Path
    mcp_client: bool = False


SCENARIOS = [
    Scenario("offprompt", "offprompt", ROOT / "README.md"),
    Scenario("offprompt[mcp]", "offprompt[mcp]", ROOT / "README.md", mcp_client=True),
    Scenario(
        "offprompt-langchain", "offprompt-langchain", ROOT / "integrations/langchain/README.md"
    ),
    Scenario(
        "offprompt-llamaindex", "offprompt-llamaindex", ROOT / "integrations/llamaindex/README.md"
    ),
    Scenario(
        "offprompt-openai-agents",
        "offprompt-openai-agents",
        ROOT / "integrations/openai_agents/README.md",
    ),
    Scenario(
        "offprompt-anthropic", "offprompt-anthropic", ROOT / "integrations/anthropic/README.md"
    ),
    Scenario(
        "offprompt-pydantic-ai",
        "offprompt-pydantic-ai",
        ROOT / "integrations/pydantic_ai/README.md",
    ),
    Scenario("offprompt-adk", "offprompt-adk", ROOT / "integrations/adk/README.md"),
    Scenario("offprompt-strands", "offprompt-strands", ROOT / "integrations/strands/README.md"),
]


def first_python_example(readme: Path) -> str:
    """The first fenced Python block of a README (the quick start a user copies first)."""
    match = FENCE.search(readme.read_text(encoding="utf-8"))
    if match is None:
        raise CheckFailed(f"{readme.relative_to(ROOT)} has no ```python example")
    return match.group(1)


def check_core_sdist(dist: Path) -> None:
    """The core's sdist holds the core only."""
    (sdist,) = sorted(dist.glob("offprompt-*.tar.gz")) or [None]
    if sdist is None:
        raise CheckFailed(f"no core sdist in {dist}")
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    top = {n.split("/", 1)[0] for n in names}
    extra = sorted(top - CORE_SDIST_ALLOWED)
    if extra:
        raise CheckFailed(f"{sdist.name} holds more than the core: {extra}")
    packages = {n.split("/")[1] for n in names if n.startswith("src/") and n.count("/") > 1}
    if packages != {"offprompt"}:
        raise CheckFailed(f"{sdist.name} holds packages other than offprompt: {sorted(packages)}")
    print(f"{sdist.name}: {len(names)} files, only {sorted(top)}")


def wheel(dist: Path, distribution: str) -> Path:
    """The one built wheel of a distribution."""
    found = sorted(dist.glob(f"{distribution.replace('-', '_')}-*-py3-none-any.whl"))
    if len(found) != 1:
        raise CheckFailed(f"expected one wheel of {distribution} in {dist}, found {found}")
    return found[0]


def empty_environment(home: Path) -> dict[str, str]:
    """What an example runs with: nothing of this machine's, and no network.

    An MCP client starts its server with a minimal environment and a user's laptop may be
    offline, so first use must need neither ``TIKTOKEN_CACHE_DIR`` nor a download: the
    proxies lead nowhere, and only ``HOME`` (a fresh folder) and ``OFFPROMPT_HOME`` are set.
    """
    dead = "http://127.0.0.1:9"
    return {
        "HOME": str(home),
        "OFFPROMPT_HOME": str(home / ".offprompt"),
        "HTTPS_PROXY": dead,
        "HTTP_PROXY": dead,
        "https_proxy": dead,
        "http_proxy": dead,
    }


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], what: str, timeout: int = 900) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise CheckFailed(
            f"{what} failed (exit {out.returncode}):\n$ {' '.join(cmd)}\n{out.stdout}\n{out.stderr}"
        )
    return out.stdout


def check_scenario(scenario: Scenario, dist: Path, work: Path, uv: str) -> float:
    """Install one distribution alone from the built wheels and run its README example."""
    start = time.monotonic()
    venv = work / re.sub(r"\W+", "-", scenario.name)
    home = work / (venv.name + "-cwd")
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "OFFPROMPT_HOME")
    }
    env.pop("TIKTOKEN_CACHE_DIR", None)
    env["OFFPROMPT_HOME"] = str(home / ".offprompt")
    run(
        [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
        cwd=home,
        env=env,
        what="uv venv",
    )
    python = venv / "bin" / "python"
    distribution, _, extras = scenario.requirement.partition("[")
    target = str(wheel(dist, distribution)) + ("[" + extras if extras else "")
    # The core comes from dist/ too (the wheel named explicitly, and --find-links for the
    # adapters' `offprompt~=X.Y` requirement), never from the checkout or the index.
    core = str(wheel(dist, "offprompt"))
    requirements = [target] if distribution == "offprompt" else [target, core]
    run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            "--find-links",
            str(dist),
            *requirements,
        ],
        cwd=home,
        env=env,
        what=f"installing {scenario.name}",
    )
    listed = run(
        [uv, "pip", "list", "--python", str(python)], cwd=home, env=env, what="uv pip list"
    )
    where = run(
        [str(python), "-c", "import offprompt, sys; print(offprompt.__file__); print(sys.prefix)"],
        cwd=home,
        env=env,
        what="importing offprompt",
    ).split()
    if not where[0].startswith(str(venv)) or ROOT.as_posix() in where[0]:
        raise CheckFailed(
            f"{scenario.name}: offprompt imported from {where[0]}, not the clean venv"
        )
    frameworks = [
        line.split()[0]
        for line in listed.splitlines()[2:]
        if line.split()[0] in ("langchain-core", "llama-index-core", "mcp")
    ]
    expected = {
        "offprompt": [],
        "offprompt[mcp]": ["mcp"],
        "offprompt-langchain": ["langchain-core"],
        "offprompt-llamaindex": ["llama-index-core"],
        "offprompt-openai-agents": ["mcp"],  # openai-agents itself depends on mcp
        "offprompt-anthropic": [],
        "offprompt-pydantic-ai": [],  # pydantic-ai-slim's MCP support is an extra
        "offprompt-adk": [],  # google-adk's MCP support is an extra
        "offprompt-strands": ["mcp"],  # strands-agents itself depends on mcp
    }[scenario.name]
    if sorted(frameworks) != expected:
        raise CheckFailed(
            f"{scenario.name}: the clean venv holds {frameworks}, expected {expected}"
        )
    example = home / "readme_example.py"
    example.write_text(first_python_example(scenario.readme), encoding="utf-8")
    out = run(
        [str(python), str(example)],
        cwd=home,
        env=empty_environment(home),
        what=f"{scenario.name}: the README example",
        timeout=300,
    )
    print(f"--- {scenario.name}: {scenario.readme.relative_to(ROOT)}'s first example ran:")
    print("    " + "\n    ".join(out.strip().splitlines()[:8]))
    if scenario.mcp_client:
        client = home / "mcp_client.py"
        client.write_text(MCP_CLIENT, encoding="utf-8")
        out = run(
            [str(python), str(client), str(venv / "bin" / "offprompt"), str(home / "mcp-home")],
            cwd=home,
            env=empty_environment(home),
            what=f"{scenario.name}: offprompt mcp serve",
            timeout=120,
        )
        print("    " + out.strip())
    mcp_version = [line.split()[1] for line in listed.splitlines()[2:] if line.split()[0] == "mcp"]
    if mcp_version:
        print(f"    (mcp {mcp_version[0]})")
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", type=Path, help="the folder python -m build wrote")
    parser.add_argument("--only", action="append", help="run only these scenarios (by name)")
    args = parser.parse_args(argv)
    uv = (
        str(Path(sys.executable).parent / "uv")
        if (Path(sys.executable).parent / "uv").exists()
        else shutil.which("uv")
    )
    if uv is None:
        print("check_distributions: uv is not installed (make setup installs it)", file=sys.stderr)
        return 1
    failures = []
    try:
        check_core_sdist(args.dist.resolve())
    except CheckFailed as exc:
        failures.append(str(exc))
    with tempfile.TemporaryDirectory(prefix="offprompt-dist-") as tmp:
        for scenario in SCENARIOS:
            if args.only and scenario.name not in args.only:
                continue
            try:
                took = check_scenario(scenario, args.dist.resolve(), Path(tmp), uv)
                print(f"    ok in {took:.1f} s")
            except (CheckFailed, subprocess.TimeoutExpired) as exc:
                failures.append(f"{scenario.name}: {exc}")
                print(f"--- {scenario.name}: FAILED", file=sys.stderr)
    for failure in failures:
        print(f"\ncheck_distributions: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
