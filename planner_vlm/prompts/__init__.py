"""Versioned prompt templates of the VLM planner and verifier, and their loader.

Each template is a Markdown file ``<name>_<version>.md`` in this folder (``plan_v1.md``,
``verify_v1.md``, ``repair_v1.md``) with ``=== system ===`` / ``=== user ===`` sections and
``$placeholder`` fields (``string.Template``, so JSON braces need no escaping). A new prompt is a
new file (``plan_v2.md``); old versions stay so logged episodes remain reproducible. Every rendered
prompt carries its name, version and the template's sha256 into the episode log.
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from importlib import resources

from tandem.core.errors import ConfigError

_SECTION = re.compile(r"^=== (system|user) ===[ \t]*$", re.MULTILINE)
_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)
_BLANKS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template.

    Attributes:
        name: ``"plan"``, ``"verify"`` or ``"repair"``.
        version: e.g. ``"v1"``.
        system: the system section (``""`` if absent).
        user: the user section.
        sha256: hex digest of the file's bytes.
    """

    name: str
    version: str
    system: str
    user: str
    sha256: str

    def render(self, **values: object) -> tuple[str, str]:
        """Fill the placeholders. Returns ``(system, user)``.

        Raises:
            ConfigError: if a placeholder has no value (names it).
        """
        try:
            system = string.Template(self.system).substitute(values).strip()
            user = string.Template(self.user).substitute(values).strip()
        except KeyError as e:
            raise ConfigError(f"prompt {self.name}_{self.version} needs a value for ${e.args[0]}") from None
        # an empty optional field (e.g. no failure yet) leaves no run of blank lines
        return _BLANKS.sub("\n\n", system), _BLANKS.sub("\n\n", user)


def available_versions(name: str) -> list[str]:
    """Versions present for template ``name``, e.g. ``["v1"]``."""
    files = resources.files(__name__).iterdir()
    return sorted(f.name[len(name) + 1:-3] for f in files if f.name.startswith(name + "_") and f.name.endswith(".md"))


def load_prompt(name: str, version: str = "v1") -> PromptTemplate:
    """Load ``<name>_<version>.md`` from this package.

    Raises:
        ConfigError: if no such template exists (lists the available versions).
    """
    f = resources.files(__name__) / f"{name}_{version}.md"
    if not f.is_file():
        raise ConfigError(f"no prompt template {name}_{version}.md; available versions of {name!r}: "
                          f"{available_versions(name) or '(none)'}")
    raw = f.read_bytes()
    text = _COMMENT.sub("", raw.decode("utf-8"), count=1)
    sections: dict[str, str] = {}
    matches = list(_SECTION.finditer(text))
    if not matches:
        raise ConfigError(f"prompt {name}_{version}.md has no '=== user ===' section")
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections[m.group(1)] = text[m.end():end].strip("\n")
    return PromptTemplate(name=name, version=version, system=sections.get("system", ""),
                          user=sections.get("user", ""), sha256=hashlib.sha256(raw).hexdigest())
