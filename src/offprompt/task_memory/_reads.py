"""How ``TaskMemory`` serves reads of a stored text: pages, passages of query hits,
the page a chunk falls on, and the page plan of a summary.

The functions here take the namespace's metadata and its :class:`TextView` (from the
view cache) and never touch the catalog: the facade looks the namespace up, marks the
read as running (so background indexing yields) and calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from offprompt.artifacts import TextArtifact

__all__ = ["SummaryPlan"]

#: A summary reads the output in pages this many times the memory's page unit.
SUMMARY_PAGE_FACTOR = 8


@dataclass(frozen=True)
class SummaryPlan:
    """The pages a summary reads, shared by ``summarize`` and ``asummarize``.

    Page 1 is read when the plan is made (it tells how many pages there are); the
    others are read one at a time through :attr:`rest`. Each page is summarized, and
    the page summaries are summarized together when there is more than one. One page
    or several, the result carries ``meta = {"pages": n, "tool": ...}``.
    """

    namespace: str
    tool: str | None
    page_tokens: int
    pages: int
    first: str

    @classmethod
    def start(
        cls,
        namespace: str,
        tool: str | None,
        page_tokens: int,
        read: Callable[[str, int, int], TextArtifact],
    ) -> SummaryPlan:
        """The plan for ``namespace``: reads its page 1 with ``read(namespace, page, size)``."""
        size = page_tokens * SUMMARY_PAGE_FACTOR
        first = read(namespace, 1, size)
        return cls(namespace, tool, size, int(first.meta["pages"]), first.value)

    @property
    def rest(self) -> range:
        """The page numbers after the first."""
        return range(2, self.pages + 1)

    @property
    def combine(self) -> bool:
        """Whether the page summaries are summarized together (more than one page)."""
        return self.pages > 1

    @staticmethod
    def joined(parts: Sequence[str]) -> str:
        """The page summaries as the text of the combined summary."""
        return "\n\n".join(parts)

    def result(self, value: str) -> TextArtifact:
        """The summary artifact."""
        return TextArtifact(
            value=value, name=self.namespace, meta={"pages": self.pages, "tool": self.tool}
        )
