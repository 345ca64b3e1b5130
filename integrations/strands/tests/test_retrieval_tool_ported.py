"""Strands' own ContextOffloader retrieval-tool tests, on Strands' storage and on ours.

Ported from strands-agents 1.62 ``tests/strands/vended_plugins/context_offloader/
test_plugin.py`` (Apache-2.0): the ``TestRetrievalTool`` and ``TestRetrievalToolSearch``
classes unchanged but for the ``storage`` fixture, parametrized over Strands'
``InMemoryStorage`` and ``OffpromptStorage``. The plugin is Strands' real
``ContextOffloader``; the agent is Strands' own ``MagicMock`` stand-in (the retrieval
tool only passes it back to the storage lookup).
"""
# mypy: ignore-errors

from unittest.mock import MagicMock

import pytest
from offprompt_strands import OffpromptStorage
from strands.types.tools import ToolContext, ToolUse
from strands.vended_plugins.context_offloader import ContextOffloader, InMemoryStorage


class TestRetrievalTool:
    @pytest.fixture(params=["strands-memory", "offprompt"])
    def storage(self, request):
        """Strands' InMemoryStorage (the self-check) or ours."""
        if request.param == "strands-memory":
            yield InMemoryStorage()
            return
        with OffpromptStorage() as storage:
            yield storage

    @pytest.fixture
    def plugin(self, storage):
        return ContextOffloader(
            storage=storage, max_result_tokens=25, preview_tokens=10, include_retrieval_tool=True
        )

    @pytest.fixture
    def mock_agent(self):
        return MagicMock()

    @pytest.fixture
    def tool_context(self, mock_agent):
        tool_use = ToolUse(toolUseId="retrieve_1", name="retrieve_offloaded_content", input={})
        return ToolContext(tool_use=tool_use, agent=mock_agent, invocation_state={})

    def test_retrieval_tool_registered_when_enabled(self, plugin):
        tool_names = [t.tool_name for t in plugin.tools]
        assert "retrieve_offloaded_content" in tool_names

    def test_retrieval_tool_registered_by_default(self):
        plugin = ContextOffloader(storage=InMemoryStorage())
        plugin.init_agent(MagicMock())
        tool_names = [t.tool_name for t in plugin.tools]
        assert "retrieve_offloaded_content" in tool_names

    def test_retrieval_tool_not_registered_when_disabled(self):
        plugin = ContextOffloader(storage=InMemoryStorage(), include_retrieval_tool=False)
        plugin.init_agent(MagicMock())
        tool_names = [t.tool_name for t in plugin.tools]
        assert "retrieve_offloaded_content" not in tool_names

    @pytest.mark.asyncio
    async def test_retrieve_text_content(self, plugin, storage, tool_context):
        ref = await storage.store("key_1", b"hello world", "text/plain")
        result = await plugin.retrieve_offloaded_content(reference=ref, tool_context=tool_context)
        assert result == "hello world"

    @pytest.mark.asyncio
    async def test_retrieve_json_content(self, plugin, storage, tool_context):
        ref = await storage.store("key_1", b'{"key": "value"}', "application/json")
        result = await plugin.retrieve_offloaded_content(reference=ref, tool_context=tool_context)
        assert result["content"][0]["json"] == {"key": "value"}

    @pytest.mark.asyncio
    async def test_retrieve_large_text_returns_full_content(self, plugin, storage, tool_context):
        large_text = "a" * 50_000
        ref = await storage.store("key_1", large_text.encode("utf-8"), "text/plain")
        result = await plugin.retrieve_offloaded_content(reference=ref, tool_context=tool_context)
        assert result == large_text

    @pytest.mark.asyncio
    async def test_retrieve_missing_reference(self, plugin, tool_context):
        with pytest.raises(ValueError, match="reference not found: nonexistent"):
            await plugin.retrieve_offloaded_content(
                reference="nonexistent", tool_context=tool_context
            )

    @pytest.mark.asyncio
    async def test_retrieve_image_content(self, plugin, storage, tool_context):
        img_bytes = b"\x89PNG\x00\x00"
        ref = await storage.store("key_1", img_bytes, "image/png")
        result = await plugin.retrieve_offloaded_content(reference=ref, tool_context=tool_context)
        assert result["status"] == "success"
        assert result["content"][0]["image"]["format"] == "png"
        assert result["content"][0]["image"]["source"]["bytes"] == img_bytes

    @pytest.mark.asyncio
    async def test_retrieve_document_content(self, plugin, storage, tool_context):
        doc_bytes = b"%PDF-1.4 content"
        ref = await storage.store("key_1", doc_bytes, "application/pdf")
        result = await plugin.retrieve_offloaded_content(reference=ref, tool_context=tool_context)
        assert result["status"] == "success"
        assert result["content"][0]["document"]["format"] == "pdf"
        assert result["content"][0]["document"]["source"]["bytes"] == doc_bytes


class TestRetrievalToolSearch:
    """Tests for the search/grep functionality of the retrieval tool."""

    @pytest.fixture(params=["strands-memory", "offprompt"])
    def storage(self, request):
        """Strands' InMemoryStorage (the self-check) or ours."""
        if request.param == "strands-memory":
            yield InMemoryStorage()
            return
        with OffpromptStorage() as storage:
            yield storage

    @pytest.fixture
    def plugin(self, storage):
        return ContextOffloader(
            storage=storage, max_result_tokens=25, preview_tokens=10, include_retrieval_tool=True
        )

    @pytest.fixture
    def mock_agent(self):
        return MagicMock()

    @pytest.fixture
    def tool_context(self, mock_agent):
        tool_use = ToolUse(toolUseId="retrieve_1", name="retrieve_offloaded_content", input={})
        return ToolContext(tool_use=tool_use, agent=mock_agent, invocation_state={})

    @pytest.mark.asyncio
    async def test_finds_matching_lines_with_context(self, plugin, storage, tool_context):
        content = "\n".join(f"line {i + 1}" for i in range(20))
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, pattern="line 10", context_lines=2, tool_context=tool_context
        )

        assert "1 match for /line 10/" in result
        assert "> 10| line 10" in result
        assert "   8| line 8" in result
        assert "  12| line 12" in result

    @pytest.mark.asyncio
    async def test_returns_line_range_without_pattern(self, plugin, storage, tool_context):
        content = "\n".join(f"line {i + 1}" for i in range(50))
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, line_range={"start": 5, "end": 10}, tool_context=tool_context
        )

        assert "[Lines 5-10 of 50]" in result
        assert "  5| line 5" in result
        assert " 10| line 10" in result
        assert "line 4" not in result
        assert "line 11" not in result

    @pytest.mark.asyncio
    async def test_searches_within_line_range(self, plugin, storage, tool_context):
        content = "\n".join(f"item {i + 1}" for i in range(30))
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref,
            pattern="item 1",
            line_range={"start": 10, "end": 20},
            context_lines=0,
            tool_context=tool_context,
        )

        assert "in lines 10-20" in result
        assert "> 10| item 10" in result
        assert "> 11| item 11" in result
        assert "> 1|" not in result

    @pytest.mark.asyncio
    async def test_respects_custom_context_lines(self, plugin, storage, tool_context):
        content = "\n".join(f"line {i + 1}" for i in range(20))
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, pattern="line 10", context_lines=0, tool_context=tool_context
        )

        assert "> 10| line 10" in result
        assert "line 9" not in result
        assert "line 11" not in result

    @pytest.mark.asyncio
    async def test_raises_for_binary_content(self, plugin, storage, tool_context):
        ref = await storage.store("k1", b"\x89PNG", "image/png")

        with pytest.raises(ValueError, match=r"cannot search binary content \(image/png\)"):
            await plugin.retrieve_offloaded_content(
                reference=ref, pattern="test", tool_context=tool_context
            )

    @pytest.mark.asyncio
    async def test_falls_back_to_literal_on_invalid_regex(self, plugin, storage, tool_context):
        content = "foo (bar\nbaz\nfoo (bar again"
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, pattern="foo (bar", context_lines=0, tool_context=tool_context
        )

        assert "2 matches" in result
        assert "> 1| foo (bar" in result
        assert "> 3| foo (bar again" in result

    @pytest.mark.asyncio
    async def test_raises_for_missing_reference(self, plugin, tool_context):
        with pytest.raises(ValueError, match="reference not found: nonexistent"):
            await plugin.retrieve_offloaded_content(
                reference="nonexistent", pattern="test", tool_context=tool_context
            )

    @pytest.mark.asyncio
    async def test_searches_json_content(self, plugin, storage, tool_context):
        json_str = '{\n  "name": "test",\n  "items": [\n    1,\n    2,\n    3\n  ]\n}'
        ref = await storage.store("k1", json_str.encode("utf-8"), "application/json")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, pattern="items", context_lines=1, tool_context=tool_context
        )

        assert "1 match for /items/" in result
        assert "items" in result

    @pytest.mark.asyncio
    async def test_reports_no_matches(self, plugin, storage, tool_context):
        content = "hello\nworld\n"
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, pattern="nonexistent", tool_context=tool_context
        )

        assert "No matches found for pattern 'nonexistent'" in result

    @pytest.mark.asyncio
    async def test_truncates_when_too_many_matches(self, storage, tool_context):
        plugin = ContextOffloader(
            storage=storage,
            max_result_tokens=50,
            preview_tokens=10,
            include_retrieval_tool=True,
        )
        content = "\n".join(f"match line {i + 1}" for i in range(500))
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, pattern="match", context_lines=0, tool_context=tool_context
        )

        assert "output truncated, narrow your search" in result
        assert len(result) < len(content)

    @pytest.mark.asyncio
    async def test_merges_overlapping_context(self, plugin, storage, tool_context):
        content = "\n".join(f"line {i + 1}" for i in range(10))
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, pattern="line [45]", context_lines=2, tool_context=tool_context
        )

        assert "2 matches" in result
        assert "---" not in result

    @pytest.mark.asyncio
    async def test_line_range_start_beyond_content(self, plugin, storage, tool_context):
        content = "line 1\nline 2\nline 3"
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        with pytest.raises(ValueError, match=r"beyond content length \(3 lines\)"):
            await plugin.retrieve_offloaded_content(
                reference=ref, line_range={"start": 100, "end": 200}, tool_context=tool_context
            )

    @pytest.mark.asyncio
    async def test_clamps_line_range_end(self, plugin, storage, tool_context):
        content = "line 1\nline 2\nline 3"
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, line_range={"start": 2, "end": 100}, tool_context=tool_context
        )

        assert "[Lines 2-3 of 3]" in result
        assert "line 2" in result
        assert "line 3" in result

    @pytest.mark.asyncio
    async def test_returns_first_n_lines_with_only_context_lines(self, storage, tool_context):
        plugin = ContextOffloader(
            storage=storage, max_result_tokens=2500, preview_tokens=10, include_retrieval_tool=True
        )
        content = "\n".join(f"line {i + 1}" for i in range(20))
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(
            reference=ref, context_lines=10, tool_context=tool_context
        )

        assert "[Lines 1-10 of 20]" in result
        assert "line 1" in result
        assert "line 10" in result
        assert "line 11" not in result

    @pytest.mark.asyncio
    async def test_full_retrieval_without_search_params(self, plugin, storage, tool_context):
        content = "hello world"
        ref = await storage.store("k1", content.encode("utf-8"), "text/plain")

        result = await plugin.retrieve_offloaded_content(reference=ref, tool_context=tool_context)

        assert result == "hello world"
