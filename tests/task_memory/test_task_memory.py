"""TaskMemory on the real embedded Qdrant engine, real files and the real tokenizer."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offprompt.artifacts import (
    BlobArtifact,
    BooleanArtifact,
    ErrorArtifact,
    ImageArtifact,
    InfoArtifact,
    JsonArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import NamespaceError, NotFoundError, StorageError, ValidationError
from offprompt.task_memory import (
    ActionSubtaskMetaEntry,
    FileBlobStore,
    InMemoryBlobStore,
    StorageMismatchError,
    TaskMemory,
    TextArtifactStorage,
)
from offprompt.task_memory.chunking import chunks_from_segments, iter_chunks, tokenize_segments
from offprompt.task_memory.pipeline import consume_behind
from offprompt.tokens import default_tokenizer
from offprompt.vectors import HashingEmbedder, QdrantVectorStore

REF = 'Output of "{t}.{a}" was stored in memory with memory_name "TaskMemory" and artifact_namespace "{n}".'


def _log(lines: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    words = [
        "request",
        "served",
        "cache",
        "miss",
        "user",
        "GET",
        "/api/v1/items",
        "200",
        "latency",
        "ms",
        "é",
        "日本",
    ]
    return "\n".join(
        f"{i:06d} " + " ".join(rng.choice(words) for _ in range(12)) for i in range(lines)
    )


@pytest.fixture
def memory() -> TaskMemory:
    return TaskMemory(chunk_tokens=64, overlap_tokens=8, page_tokens=128)


# ------------------------------------------------------------------ chunking


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=600), st.integers(2, 40)
)
def test_chunks_rebuild_the_text_exactly(text: str, chunk_tokens: int) -> None:
    enc = default_tokenizer().encoding
    chunks = list(
        iter_chunks(text, enc, chunk_tokens=chunk_tokens, overlap_tokens=1, segment_chars=64)
    )
    assert "".join(c.text for c in chunks) == text
    assert all(text[c.start : c.end] == c.text for c in chunks)
    assert all(c.tokens <= chunk_tokens + 3 for c in chunks)  # + a split character
    assert sum(c.tokens for c in chunks) == len(default_tokenizer().encode(text)) or len(text) > 64
    assert all(c.embed_text.endswith(c.text) for c in chunks)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="ab c:=é\t{}", max_size=60), min_size=1, max_size=40),
    st.integers(4, 48),
)
def test_chunks_end_at_a_line_end_when_their_second_half_has_one(
    lines: list[str], chunk_tokens: int
) -> None:
    enc = default_tokenizer().encoding
    text = "\n".join(lines)
    chunks = list(iter_chunks(text, enc, chunk_tokens=chunk_tokens, overlap_tokens=0))
    assert "".join(c.text for c in chunks) == text
    for chunk in chunks[:-1]:
        ids = [int(i) for i in chunk.token_ids]
        # the tokens of the second half (after the first chunk_tokens // 2 + 1)
        tail = [enc.decode_single_token_bytes(i) for i in ids[chunk_tokens // 2 + 1 :]]
        if chunk.tokens >= chunk_tokens and not chunk.text.endswith("\n"):
            # cut inside a line only when no token of its second half ends one
            assert not any(b"\n" in piece for piece in tail), chunk.text


def test_a_log_line_is_whole_in_one_chunk() -> None:
    # 60 lines of ~20 tokens: a fixed 64-token cut splits most chunks' last line.
    enc = default_tokenizer().encoding
    text = "".join(
        f"2026-01-{i % 28 + 1:02d} node-{i} kernel: event {i * 7919} done\n" for i in range(60)
    )
    lines = text.splitlines(keepends=True)
    aligned = list(iter_chunks(text, enc, chunk_tokens=64, overlap_tokens=0))
    fixed = list(iter_chunks(text, enc, chunk_tokens=64, overlap_tokens=0, align_lines=False))
    assert "".join(c.text for c in aligned) == text
    assert all(c.text.endswith("\n") for c in aligned)
    assert sum(any(line in c.text for c in aligned) for line in lines) == len(lines)
    assert sum(any(line in c.text for c in fixed) for line in lines) < len(lines)


def _best_chunk(bm25_avg_len: float | None) -> str:
    """The best chunk for a query whose words a noisy chunk repeats and the target holds once."""
    with QdrantVectorStore(lexical="tokens") as store:
        storage = TextArtifactStorage(
            store, chunk_tokens=64, overlap_tokens=0, bm25_avg_len=bm25_avg_len
        )
        filler = "".join(f"heartbeat ok from worker {i} at tick {i * 13}\n" for i in range(40))
        noisy = "job: retry scheduled, retry scheduled, retry scheduled\n" * 4
        target = "worker 7 retry scheduled after disk quota exceeded\n"
        entry = storage.write(
            "ns",
            TextArtifact(value=filler + noisy + filler + target + filler),
            generation="g",
            first_seq=0,
            tenant="default",
        )
        hits = storage.query(
            "ns", [entry], "retry scheduled quota", 1, tenant="default", mode="sparse"
        )
        return hits[0].text


def test_chunk_bm25_saturates_repeated_words() -> None:
    # Weighed as documents many chunks long (the default), a word counts little more
    # for being repeated: the chunk naming all three query words wins; with a short
    # document length the chunk repeating two of them does.
    assert "quota" in _best_chunk(None)
    assert "scheduled, retry" in _best_chunk(32)
    with pytest.raises(ValidationError, match="bm25_avg_len"):
        TextArtifactStorage(QdrantVectorStore(lexical="tokens"), bm25_avg_len=0)


def test_chunking_never_splits_a_character_and_rejects_surrogates() -> None:
    enc = default_tokenizer().encoding
    text = "🎉\U0001d518\U0001d52b\u4e2d\u00e9" * 300  # multi-token characters
    chunks = list(iter_chunks(text, enc, chunk_tokens=5, overlap_tokens=0))
    assert "".join(c.text for c in chunks) == text
    assert all(c.text.encode("utf-8").decode("utf-8") == c.text for c in chunks)
    with pytest.raises(ValidationError, match="not valid Unicode"):
        list(iter_chunks("ok \ud800 bad", enc))
    with pytest.raises(ValidationError):
        list(iter_chunks("x", enc, chunk_tokens=4, overlap_tokens=4))


# ------------------------------------------------------------------ process_output


def test_process_output_stores_and_returns_the_exact_reference(memory: TaskMemory) -> None:
    text = _log(400)
    info = memory.process_output("logs", "fetch", TextArtifact(value=text, name="run-1"))
    assert isinstance(info, InfoArtifact)
    # The sentence stays first, word for word; the card follows it (issue 13).
    assert info.value.split("\n")[0] == REF.format(t="logs", a="fetch", n="run-1")
    assert text not in info.value
    bare = TaskMemory(preview=False).process_output(
        "logs", "fetch", TextArtifact(value=text, name="run-1")
    )
    assert bare.value == REF.format(t="logs", a="fetch", n="run-1")
    assert memory.namespaces() == ["run-1"]
    meta = memory.namespace_metadata("run-1")
    assert (meta["tool"], meta["activity"], meta["storage"]) == ("logs", "fetch", "text")
    assert meta["bytes"] == len(text.encode()) and meta["tokens"] > 0 and meta["created_at"]
    loaded = memory.load_artifacts("run-1")
    assert loaded.value[0].value == text


def test_query_finds_a_fact_and_read_pages_rebuild_the_original(memory: TaskMemory) -> None:
    text = (
        _log(300)
        + "\nALERT: the backup of database orion-7 failed with code E4471\n"
        + _log(300, seed=1)
    )
    memory.process_output("logs", "fetch", TextArtifact(value=text, name="run"))
    hits = memory.query("run", "why did the orion-7 backup fail?", top_n=3)
    assert "E4471" in hits.value[0].value
    assert hits.value[0].meta["page"] >= 1
    meta = memory.namespace_metadata("run")
    pages = [memory.read("run", p) for p in range(1, meta["pages"] + 1)]
    assert "".join(p.value for p in pages) == text
    assert pages[0].meta == {
        "page": 1,
        "pages": meta["pages"],
        "namespace": "run",
        "first_line": 1,
        "last_line": pages[0].value.count("\n"),  # it ends at a line end
        "lines": len(text.splitlines()),
        "starts_mid_line": False,
        "ends_mid_line": False,
    }
    assert all(p.value.endswith("\n") for p in pages[:-1])  # the last: where the text ends
    with pytest.raises(ValidationError):
        memory.read("run", meta["pages"] + 1)
    with pytest.raises(NotFoundError):
        memory.read("nope")


@pytest.mark.parametrize("value", ["", "   \n\t  "])
def test_empty_output_stores_nothing(memory: TaskMemory, value: str) -> None:
    result = memory.process_output("t", "a", TextArtifact(value=value, name="e"))
    assert isinstance(result, InfoArtifact) and result.value == "tool output is empty"
    assert memory.namespaces() == []


def test_min_tokens_passes_small_output_unless_sensitive() -> None:
    memory = TaskMemory(min_tokens=50)
    small = TextArtifact(value="short answer", name="s")
    assert memory.process_output("t", "a", small) is small
    info = memory.process_output(
        "t", "a", TextArtifact(value="secret token sk-123", name="k"), sensitive=True
    )
    assert isinstance(info, InfoArtifact) and "sk-123" not in info.value
    assert memory.namespace_metadata("k")["sensitive"] is True
    big = memory.process_output("t", "a", TextArtifact(value=_log(50), name="b"), min_tokens=10)
    assert isinstance(big, InfoArtifact)
    assert memory.namespaces() == ["b", "k"]


def test_bad_namespace_and_mixed_storage_return_errors(memory: TaskMemory) -> None:
    bad = memory.process_output("t", "a", TextArtifact(value="x" * 50, name="../etc"))
    assert isinstance(bad, ErrorArtifact) and "namespace '../etc'" in bad.value
    memory.process_output("t", "a", TextArtifact(value="hello", name="shared"))
    mixed = memory.process_output("t", "a", BlobArtifact(value=b"\x00\x01", name="shared"))
    assert isinstance(mixed, ErrorArtifact) and "holds text" in mixed.value
    with pytest.raises(StorageMismatchError):
        memory.store_artifact("shared", BlobArtifact(value=b"\x00"))
    listed = ListArtifact(value=[TextArtifact(value="a"), BlobArtifact(value=b"b")], name="mix")
    assert isinstance(memory.process_output("t", "a", listed), ErrorArtifact)
    # JSON is stored since issue 13; a type no storage takes is still refused.
    assert isinstance(
        memory.process_output("t", "a", JsonArtifact(value={"a": 1}, name="j")), InfoArtifact
    )
    assert isinstance(memory.process_output("t", "a", BooleanArtifact(value=True)), ErrorArtifact)
    assert memory.namespaces() == ["j", "shared"]
    assert memory.load_artifacts("shared").value[0].value == "hello"


def test_lists_store_item_by_item_and_blobs_round_trip(memory: TaskMemory) -> None:
    texts = ListArtifact(
        value=[TextArtifact(value=f"row {i}: " + _log(20, i), meta={"i": i}) for i in range(3)],
        name="rows",
    )
    memory.process_output("db", "select", texts)
    loaded = memory.load_artifacts("rows").value
    assert [a.value for a in loaded] == [a.value for a in texts.value]
    assert [a.meta for a in loaded] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert [a.id for a in loaded] == [a.id for a in texts.value]
    png = ImageArtifact.from_pil(
        __import__("PIL.Image", fromlist=["Image"]).new("RGB", (3, 2)), name="shot"
    )
    memory.process_output(
        "browser",
        "screenshot",
        ListArtifact(value=[png, BlobArtifact(value=b"\xff" * 10)], name="shots"),
    )
    blobs = memory.load_artifacts("shots").value
    assert blobs[0] == png and blobs[1].value == b"\xff" * 10
    assert memory.namespace_metadata("shots")["storage"] == "blob"
    assert memory.query("shots", "anything").value == []
    assert "Blob" in memory.read("shots").value or "Image" in memory.read("shots").value


def test_store_artifact_appends_to_a_namespace(memory: TaskMemory) -> None:
    memory.store_artifact("ns", TextArtifact(value=_log(30)))
    memory.store_artifact("ns", TextArtifact(value="second part " + _log(30, 5)))
    loaded = memory.load_artifacts("ns").value
    assert len(loaded) == 2 and loaded[1].value.startswith("second part")
    meta = memory.namespace_metadata("ns")
    full = "".join(memory.read("ns", p).value for p in range(1, meta["pages"] + 1))
    assert full == loaded[0].value + loaded[1].value


def test_summarize_and_delete(memory: TaskMemory) -> None:
    text = "The deployment failed because the database migration timed out. " * 3 + _log(200)
    memory.process_output("ci", "deploy", TextArtifact(value=text, name="ci"))
    summary = memory.summarize("ci")
    assert isinstance(summary, TextArtifact) and summary.value and len(summary.value) < len(text)
    assert memory.delete("ci") is True
    assert memory.delete("ci") is False
    assert memory.namespaces() == [] and memory.query("ci", "database").value == []
    assert memory.vector_store.count("ci") == 0


async def test_summarize_and_asummarize_share_one_page_plan(memory: TaskMemory) -> None:
    """One page or several, the sync and async summaries agree on text and meta."""
    from offprompt.summarizers import ExtractiveSummarizer

    summarizer = ExtractiveSummarizer(tokenizer=memory.tokenizer)
    memory.process_output("ci", "deploy", TextArtifact(value="disk full on node 7\n", name="one"))
    memory.process_output("ci", "deploy", TextArtifact(value=_log(4000), name="many"))
    for namespace, pages in (("one", 1), ("many", None)):
        sync = memory.summarize(namespace, summarizer, max_tokens=60)
        both = await memory.asummarize(namespace, summarizer, max_tokens=60)
        assert sync.value == both.value
        assert sync.meta == both.meta
        # without a summarizer: the excerpt, the same from both twins
        excerpt = memory.summarize(namespace, max_tokens=120)
        default = await memory.asummarize(namespace, max_tokens=120)
        assert excerpt.value == default.value and excerpt.meta == default.meta
        assert default.value.startswith(f'Excerpt of artifact_namespace "{namespace}"')
        assert default.meta["excerpt"] == "lines" and default.meta["tool"] == "ci"
        assert sync.meta["tool"] == "ci" and sync.meta["pages"] >= 1
        if pages is not None:
            assert sync.meta["pages"] == pages
    assert memory.summarize("many", summarizer).meta["pages"] > 1


def test_meta_memory_records_the_calling_step(memory: TaskMemory) -> None:
    entry = ActionSubtaskMetaEntry(
        thought="need the logs", actions='[{"name": "logs.fetch"}]', answer="stored"
    )
    memory.process_output("logs", "fetch", TextArtifact(value=_log(10), name="n"), context=entry)
    assert memory.meta_memory.entries == [entry]
    assert memory.namespace_metadata("n")["subtasks"] == [entry.to_dict()]


# ------------------------------------------------------------------ isolation, persistence, faults


def test_unknown_namespace_is_empty_and_tenants_never_leak() -> None:
    store = QdrantVectorStore(embedder=HashingEmbedder(dimensions=64))
    acme = TaskMemory(vector_store=store, tenant="acme")
    globex = TaskMemory(vector_store=store, tenant="globex")
    acme.process_output("t", "a", TextArtifact(value="the launch code is 1234", name="shared"))
    globex.process_output("t", "a", TextArtifact(value="the launch code is 1234", name="shared"))
    globex.process_output("t", "a", TextArtifact(value="globex only note", name="g"))
    assert acme.namespaces() == ["shared"]
    assert len(acme.query("shared", "launch code", top_n=10).value) == 1
    assert acme.query("g", "note").value == []
    assert acme.query("unknown", "launch code").value == []
    acme.delete("shared")
    assert globex.load_artifacts("shared").value[0].value == "the launch code is 1234"


def test_reopened_memory_sees_and_queries_every_namespace(tmp_path: Path) -> None:
    first = TaskMemory(path=tmp_path)
    first.process_output(
        "logs", "fetch", TextArtifact(value=_log(200) + "\nneedle: quasar-99\n", name="logs")
    )
    first.process_output("cam", "snap", BlobArtifact(value=b"\x89PNG...", name="snap"))
    first.vector_store.close()
    again = TaskMemory(path=tmp_path)
    assert again.namespaces() == ["logs", "snap"]
    assert "quasar-99" in again.query("logs", "quasar-99 needle", top_n=1).value[0].value
    assert again.load_artifacts("snap").value[0].value == b"\x89PNG..."
    assert again.namespace_metadata("logs")["tool"] == "logs"


def test_crash_between_upsert_and_metadata_leaves_nothing_visible(tmp_path: Path) -> None:
    memory = TaskMemory(path=tmp_path, chunk_tokens=64, overlap_tokens=0)
    memory.process_output("t", "a", TextArtifact(value="committed before " + _log(40), name="old"))
    # Indexed before commits fail: a query of an output whose index could not be
    # recorded says so (StorageError), it does not answer from part of it.
    assert memory.wait_indexed("old")

    def crash(*args: object, **kwargs: object) -> None:
        raise StorageError("simulated crash before the metadata write")

    # The commit point is the metadata row in task.db (issue 29; before, a vector point).
    assert memory.store is not None
    memory.store.task_commit = crash  # type: ignore[method-assign]
    with pytest.raises(StorageError):
        memory.store_artifact("new", TextArtifact(value=_log(100)))
    with pytest.raises(StorageError):
        memory.store_artifact("old", TextArtifact(value="appended half " + _log(100)))
    for reader in (memory, TaskMemory(path=tmp_path, vector_store=memory.vector_store)):
        assert reader.namespaces() == ["old"]
        assert reader.query("new", "request").value == []
        assert all(
            "appended half" not in h.value
            for h in reader.query("old", "appended half", top_n=20).value
        )
        assert len(reader.load_artifacts("old").value) == 1
        with pytest.raises(NotFoundError):
            reader.namespace_metadata("new")


def test_crash_inside_the_vector_upsert_is_rolled_back() -> None:
    # index="sync" keeps the all-or-nothing write (the background path is tested in
    # test_background_indexing.py: there the raw output is committed first).
    memory = TaskMemory(chunk_tokens=64, overlap_tokens=8, page_tokens=128, index="sync")
    real = memory.vector_store.upsert
    calls = {"n": 0}

    def flaky(namespace: str, records: list) -> None:  # type: ignore[type-arg]
        calls["n"] += 1
        if calls["n"] == 2:
            raise StorageError("disk full")
        real(namespace, records)

    memory.vector_store.upsert = flaky  # type: ignore[method-assign]
    storage = next(iter(memory.storages.values()))
    storage.vector_store = memory.vector_store  # type: ignore[attr-defined]
    storage.batch_size = 4  # type: ignore[attr-defined]
    with pytest.raises(StorageError):
        memory.store_artifact("half", TextArtifact(value=_log(200)))
    assert memory.namespaces() == []
    assert memory.vector_store.count("half") == 0  # the partial generation was discarded


def test_file_blob_store_is_atomic_content_addressed_and_confined(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    key = store.put("ns", b"data")
    assert store.put("ns", b"data") == key and store.keys("ns") == [key]
    assert (tmp_path / "default" / "ns" / key).read_bytes() == b"data"
    assert not [p for p in (tmp_path / "default" / "ns").iterdir() if p.name.startswith(".tmp")]
    for bad in ["..", "../x", "/etc", "a/b", "a\\b", "a\x00b", ""]:
        with pytest.raises(NamespaceError):
            store.put(bad, b"x")
        with pytest.raises(NamespaceError):
            store.get(bad, key)
    with pytest.raises(NamespaceError):
        store.put("ns", b"x", tenant="..")
    with pytest.raises(ValidationError):
        store.get("ns", "../../etc/passwd")
    with pytest.raises(NotFoundError):
        store.get("ns", "0" * 64)
    assert store.delete("ns") == 1 and store.keys("ns") == []
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


def test_in_memory_blob_store() -> None:
    store = InMemoryBlobStore()
    key = store.put("a", b"1", tenant="t")
    assert store.get("a", key, tenant="t") == b"1"
    with pytest.raises(NotFoundError):
        store.get("a", key)
    assert store.delete("a", key, tenant="t") == 1


def test_concurrent_writers_to_one_namespace(memory: TaskMemory) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        list(
            pool.map(
                lambda i: memory.store_artifact(
                    "many", TextArtifact(value=f"item {i} " + _log(5, i))
                ),
                range(8),
            )
        )
    assert len(memory.load_artifacts("many").value) == 8


async def test_async_twins(memory: TaskMemory) -> None:
    info = await memory.aprocess_output(
        "web", "get", TextArtifact(value=_log(80) + "\nthe answer is 42\n", name="w")
    )
    assert isinstance(info, InfoArtifact)
    hits, page, listed = await asyncio.gather(
        memory.aquery("w", "what is the answer", top_n=2),
        memory.aread("w", 1),
        memory.anamespaces(),
    )
    assert any("answer is 42" in h.value for h in hits.value)
    assert page.meta["page"] == 1 and listed == ["w"]
    assert (await memory.asummarize("w")).value
    assert (await memory.aload_artifacts("w")).value[0].value.endswith("the answer is 42\n")
    assert await memory.adelete("w") is True


def test_query_hits_name_their_artifact_and_chunk_index(memory: TaskMemory) -> None:
    # Chunks do not store their artifact id or index; both follow from seq and the
    # committed entries, also across a second write to the same namespace.
    # Markers that are whole tokens: BM25 over token ids cannot tell "quasar0marker"
    # from "quasar1marker" by more than the digit, which "/api/v1" also holds.
    markers = ["quasar", "nebula"]
    items = [TextArtifact(value=f"{markers[i]} marker " + _log(40, i)) for i in range(2)]
    memory.process_output("db", "select", ListArtifact(value=items, name="parts"))
    last = TextArtifact(value=_log(30, 9) + " the zebra code is 5521")
    memory.store_artifact("parts", last)
    loaded = memory.load_artifacts("parts").value
    assert [a.id for a in loaded] == [items[0].id, items[1].id, last.id]
    for i, item in enumerate(items):
        hit = memory.query("parts", f"{markers[i]} marker", top_n=1).value[0]
        assert hit.meta["artifact_id"] == item.id
        assert hit.meta["chunk_index"] == 0
    hit = memory.query("parts", "zebra code", top_n=1).value[0]
    assert "5521" in hit.value
    assert hit.meta["artifact_id"] == last.id
    enc = default_tokenizer().encoding
    chunks = list(iter_chunks(last.value, enc, chunk_tokens=64, overlap_tokens=8))
    assert len(chunks) > 1 and hit.meta["chunk_index"] == len(chunks) - 1
    assert chunks[hit.meta["chunk_index"]].text == hit.value


def test_large_outputs_take_the_threaded_pipeline_and_match_the_serial_one() -> None:
    # Above 1M characters, tokenising and chunking run in two threads; the chunks must
    # be exactly those of the serial path.
    text = "\n".join(f"{i:07d} event {i % 97} code=é{i:x}" for i in range(60_000))
    assert len(text) > 1_000_000
    enc = default_tokenizer().encoding
    serial = list(iter_chunks(text, enc, chunk_tokens=512, overlap_tokens=64))
    threaded = consume_behind(
        lambda segments: list(
            chunks_from_segments(segments, enc, chunk_tokens=512, overlap_tokens=64)
        ),
        tokenize_segments(text, enc, chunk_tokens=512),
    )
    assert [(c.start, c.end, c.embed_text) for c in serial] == [
        (c.start, c.end, c.embed_text) for c in threaded
    ]
    assert "".join(c.text for c in threaded) == text
    assert all(c.tokens <= 512 + 3 for c in threaded)
    # every chunk but the last ends at a line end, at least half full
    assert all(c.text.endswith("\n") and c.tokens > 256 for c in threaded[:-1])
    with TaskMemory() as memory:
        memory.process_output("tool", "dump", TextArtifact(value=text, name="big"))
        assert memory.load_artifacts("big").value[0].value == text
        meta = memory.namespace_metadata("big")
        assert meta["chunks"] == len(serial)
        assert meta["bytes"] == len(text.encode("utf-8"))
        assert meta["tokens"] == sum(c.tokens for c in serial)
