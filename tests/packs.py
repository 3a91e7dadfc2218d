"""Install a third-party rule pack as users do: a distribution with a ``graphlint.rules`` entry
point, pip-installed into a folder that the test puts on PYTHONPATH."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def install_pack(src: Path, site: Path, dist: str, module: str, entry: str, code: str) -> str:
    """Build distribution ``dist`` (package ``module`` holding ``code``, entry point ``entry`` =
    ``module:RULES``) in ``src`` and install it into ``site``; returns ``site``."""
    (src / module).mkdir()
    (src / module / "__init__.py").write_text(code)
    (src / "pyproject.toml").write_text(textwrap.dedent(f'''
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{dist}"
        version = "0.1"

        [project.entry-points."graphlint.rules"]
        {entry} = "{module}:RULES"

        [tool.setuptools]
        packages = ["{module}"]
    '''))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(src)], check=True, capture_output=True)
    return str(site)
