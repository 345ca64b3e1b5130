"""A 100 MB tool output end to end: stored in streamed segments, queried, paged, reloaded."""

from __future__ import annotations

import hashlib

from offprompt.artifacts import InfoArtifact, TextArtifact
from offprompt.task_memory import TaskMemory


def test_a_100_mb_output_is_stored_queried_paged_and_reloaded_byte_identical(tmp_path) -> None:  # type: ignore[no-untyped-def]
    line = "2026-03-14T04:05:{s:02d}Z INFO api[pod-{p:04x}] GET /items/{i} 200 {ms}ms ünï\n"
    lines = [line.format(s=i % 60, p=i % 65536, i=i, ms=i % 997) for i in range(1_400_000)]
    needle = "CRIT vault-9 rejected the rotation key K-77421 (expired)\n"
    lines.insert(1_350_000, needle)
    text = "".join(lines)
    del lines
    size = len(text.encode("utf-8"))
    assert size > 100_000_000
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()

    memory = TaskMemory(path=tmp_path / "tm")
    reference = memory.process_output("logs", "fetch", TextArtifact(value=text, name="huge"))
    assert isinstance(reference, InfoArtifact)
    # The reference is the sentence, then the card, within 300 tokens (issue 13).
    assert reference.value.splitlines()[0] == memory.reference_text("logs", "fetch", "huge")
    assert memory.tokenizer.count(reference.value) <= 300
    meta = memory.namespace_metadata("huge")
    assert meta["bytes"] == size and meta["chunks"] > 50_000

    hits = memory.query("huge", "vault-9 rotation key rejected", top_n=5)
    assert any("K-77421" in hit.value for hit in hits.value)
    first = memory.read("huge", page=1)
    assert text.startswith(first.value) and first.meta["pages"] == meta["pages"]

    memory.close()
    with TaskMemory(path=tmp_path / "tm") as reopened:  # a restart: everything is still there
        restored = reopened.load_artifacts("huge").value[0].value
    assert hashlib.sha256(restored.encode("utf-8")).hexdigest() == digest
