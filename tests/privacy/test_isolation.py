"""Identical data under two tenants: no read, query, search, page, listing or CLI command
of one returns the other's. Every store is real (SQLite file, embedded Qdrant)."""

from __future__ import annotations

from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.conversation import ConversationMemory, SummaryConversationMemory
from offprompt.errors import NamespaceError
from offprompt.longterm.plans import PlanMemory, SubTask
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.steps import ActionStep, AgentMemory, TaskStep, Timing
from offprompt.stores import BaseStore, SQLiteStore
from offprompt.task_memory import TaskMemory
from offprompt.vectors import QdrantVectorStore

A = Scope(tenant="acme")
B = Scope(tenant="globex")


def _conversation(marker: str) -> list[Message]:
    return [
        Message.system("You are helpful."),
        Message.user(f"my account number is {marker}"),
        Message.assistant(f"noted {marker}"),
        Message.user("and the weather?"),
        Message.assistant("sunny"),
    ]


def _fill(store: BaseStore) -> None:
    for scope, marker in ((A, "ACME-111"), (B, "GLOBEX-222")):
        memory = ConversationMemory(store, "s1", scope=scope)
        memory.add_messages(_conversation(marker))
        store.set_state("s1", "note", {"who": marker}, scope=scope)


def _texts(messages: list[Message]) -> str:
    return " ".join(m.text for m in messages)


def test_every_store_call_sees_only_its_partition(store: BaseStore) -> None:
    _fill(store)
    for scope, mine, other in ((A, "ACME-111", "GLOBEX-222"), (B, "GLOBEX-222", "ACME-111")):
        read = store.read("s1", scope=scope)
        assert len(read) == 5
        assert mine in _texts([s.message for s in read]) and other not in _texts(
            [s.message for s in read]
        )
        assert [e.seq for e in store.read_index("s1", scope=scope)] == [0, 1, 2, 3, 4]
        assert store.count("s1", scope=scope) == 5
        assert store.version("s1", scope=scope).next_seq == 5
        assert store.get_state("s1", "note", scope=scope) == {"who": mine}
        assert store.state_keys("s1", scope=scope) == ["note"]
        listed = store.sessions(scope=scope)
        assert [(i.session_id, i.scope.tenant if i.scope else None) for i in listed] == [
            ("s1", scope.tenant)
        ]
    # The unscoped partition sees none of it.
    assert store.read("s1") == [] and store.count("s1") == 0
    assert store.get_state("s1", "note") is None
    # Deleting in one tenant leaves the other whole.
    assert store.delete_session("s1", scope=A) == 5
    assert store.count("s1", scope=A) == 0 and store.count("s1", scope=B) == 5
    assert store.delete_range("s1", 0, 2, scope=A) == 0
    assert store.count("s1", scope=B) == 5


def test_memories_windows_and_summaries_are_isolated(store: BaseStore) -> None:
    _fill(store)
    for scope, mine, other in ((A, "ACME-111", "GLOBEX-222"), (B, "GLOBEX-222", "ACME-111")):
        memory = ConversationMemory(store, "s1", scope=scope)
        text = _texts(memory.window(10_000)) + _texts(memory.messages())
        text += " ".join(_texts(r.messages) for r in memory.runs())
        assert mine in text and other not in text
        assert len(memory) == 5
        summary = SummaryConversationMemory(store, "s1", scope=scope, offset=0)
        assert summary.update_summary()
        assert mine in (summary.summary or "") and other not in (summary.summary or "")
        assert other not in _texts(summary.view())


def test_steps_and_plans_are_isolated(store: BaseStore) -> None:
    for scope, marker in ((A, "ACME-111"), (B, "GLOBEX-222")):
        agent = AgentMemory("system")
        agent.steps.append(TaskStep(task=f"task {marker}"))
        agent.steps.append(
            ActionStep(
                step_number=1, timing=Timing(start_time=1.0), model_output=f"thought {marker}"
            )
        )
        agent.save(store, "run-1", scope=scope)
        PlanMemory(store, scope=scope).batch_save(
            [SubTask(conv_id="c1", sub_task_num=1, sub_task_content=f"plan {marker}")]
        )
    for scope, mine, other in ((A, "ACME-111", "GLOBEX-222"), (B, "GLOBEX-222", "ACME-111")):
        loaded = AgentMemory.load(store, "run-1", scope=scope)
        dumped = str([s.model_dump() for s in loaded.steps])
        assert mine in dumped and other not in dumped
        plans = PlanMemory(store, scope=scope).get_by_conv_id("c1")
        assert [p.sub_task_content for p in plans] == [f"plan {mine}"]
    assert PlanMemory(store).get_by_conv_id("c1") == []


def test_scoped_view_refuses_other_scopes(store: BaseStore) -> None:
    view = store.scoped(A)
    view.append("s1", [Message.user("x")], [1])
    with pytest.raises(NamespaceError):
        view.read("s1", scope=B)
    with pytest.raises(NamespaceError):
        ConversationMemory(store, "s1", scope=Scope(tenant="acme", session="other"))


@pytest.mark.parametrize("bad", ["", "a/b", "..", "x\x00y", "z" * 300, 5])
def test_malformed_scope_values_are_refused(bad: object) -> None:
    with pytest.raises(NamespaceError):
        Scope(user=bad)  # type: ignore[arg-type]


def test_unicode_and_sql_looking_scopes_stay_apart(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    evil = Scope(tenant="x' OR '1'='1", user="Zoë 🦊")
    plain = Scope(tenant="x")
    store.append("s", [Message.user("evil data")], [1], scope=evil)
    store.append("s", [Message.user("plain data")], [1], scope=plain)
    assert [s.message.text for s in store.read("s", scope=evil)] == ["evil data"]
    assert [s.message.text for s in store.read("s", scope=plain)] == ["plain data"]
    store.close()


def test_task_memory_query_page_listing_metadata_are_isolated() -> None:
    vectors = QdrantVectorStore()
    memories = {
        marker: TaskMemory(vector_store=vectors, scope=scope, chunk_tokens=32, overlap_tokens=8)
        for scope, marker in ((A, "ACME-111"), (B, "GLOBEX-222"))
    }
    for marker, memory in memories.items():
        text = " ".join(f"line {i}: the secret code is {marker}." for i in range(40))
        memory.store_artifact("logs", TextArtifact(value=text, name="logs"), tool="t")
    for mine, other in (("ACME-111", "GLOBEX-222"), ("GLOBEX-222", "ACME-111")):
        memory = memories[mine]
        assert memory.namespaces() == ["logs"]
        hits = memory.query("logs", f"secret code {other}", top_n=10)
        assert hits.value and all(other not in h.value for h in hits.value)
        assert mine in memory.read("logs", 1).value and other not in memory.read("logs", 1).value
        loaded = memory.load_artifacts("logs")
        assert other not in loaded.value[0].value
        assert memory.namespace_metadata("logs")["tenant"] == memory.tenant
    # A user-level scope inside one tenant is its own partition too.
    user = TaskMemory(vector_store=vectors, scope=Scope(tenant="acme", user="u1"))
    assert user.namespaces() == [] and user.query("logs", "secret").value == []
    vectors.close()


def test_cli_show_only_shows_the_named_tenant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from offprompt.cli import main

    home = tmp_path / "home"
    home.mkdir()
    store = SQLiteStore(home / "memory.db")
    _fill(store)
    store.close()
    assert main(["--home", str(home), "show", "s1", "--tenant", "acme"]) == 0
    out = capsys.readouterr().out
    assert "ACME-111" in out and "GLOBEX-222" not in out
    assert main(["--home", str(home), "show", "s1", "--tenant", "globex"]) == 0
    out = capsys.readouterr().out
    assert "GLOBEX-222" in out and "ACME-111" not in out
    # Unscoped: the session does not exist in the unscoped partition.
    assert main(["--home", str(home), "show", "s1"]) == 1
    captured = capsys.readouterr()
    assert "ACME-111" not in captured.out + captured.err
