"""The CLI called in-process through ``main(argv)``: behaviour details and every error path.

The same commands run in a subprocess in the other test files; here the many variants
run fast. Each error must be one ``offprompt: error:`` line with the documented exit code
and must leave stores and output files as they were.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli.cli_helpers import write_chatstore, write_griptape, write_langchain

from offprompt.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, main
from offprompt.messages import Message
from offprompt.stores.sqlite import SQLiteStore


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("OFFPROMPT_HOME", raising=False)


def run(home: Path, *args: str) -> int:
    return main(["--home", str(home), *args])


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("offprompt: error: "), err
    return lines[0]


def test_import_twice_needs_append_and_keeps_the_first_import(
    home: Path, tmp_path: Path, capsys
) -> None:
    source = tmp_path / "g.json"
    write_griptape(source)
    assert run(home, "import", "--format", "griptape", str(source), "--session", "c") == EXIT_OK
    assert (
        run(home, "import", "--format", "griptape", str(source), "--session", "c") == EXIT_FAILURE
    )
    assert "session 'c' already holds 4 messages; pass --append" in error_line(capsys)
    with SQLiteStore(home / "memory.db") as store:
        assert store.count("c") == 4
    assert (
        run(home, "import", "-f", "griptape", str(source), "--session", "c", "--append") == EXIT_OK
    )
    with SQLiteStore(home / "memory.db") as store:
        texts = [m.message.text for m in store.read("c")]
    assert texts == ["Name a colour.", "Teal.", "Another?", "Ochre."] * 2


def test_session_name_defaults_to_the_file_stem_and_home_can_follow_the_command(
    home: Path, tmp_path: Path, capsys
) -> None:
    source = tmp_path / "my chat.json"
    write_langchain(source)
    assert main(["import", "--format", "langchain", str(source), "--home", str(home)]) == EXIT_OK
    assert "session 'my chat'" in capsys.readouterr().out
    assert main(["inspect", "--json", "--home", str(home)]) == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    assert document["home"] == str(home)
    assert [(s["session"], s["messages"]) for s in document["sessions"]] == [("my chat", 5)]


def test_home_defaults_to_offprompt_home(monkeypatch, home: Path, tmp_path: Path, capsys) -> None:
    source = tmp_path / "g.json"
    write_griptape(source)
    monkeypatch.setenv("OFFPROMPT_HOME", str(home))
    assert main(["import", "--format", "griptape", str(source)]) == EXIT_OK
    assert (home / "memory.db").is_file()


def test_offprompt_lines_round_trip_every_field(home: Path, tmp_path: Path, capsys) -> None:
    from cli.cli_helpers import png

    from offprompt.artifacts import ImageArtifact
    from offprompt.messages import ToolCall

    messages = [
        Message.system("sys"),
        Message.user(["look", ImageArtifact(value=png())], meta={"k": [1, "ü"]}),
        Message.assistant(tool_calls=[ToolCall(id="c", name="t", arguments={"a": None})]),
        Message.tool("r" * 10_000, tool_call_id="c", name="t"),
    ]
    source = tmp_path / "s.jsonl"
    source.write_text("".join(m.to_json() + "\n" for m in messages) + "\n", encoding="utf-8")
    assert run(home, "import", "--format", "offprompt", str(source)) == EXIT_OK
    out = tmp_path / "back.jsonl"
    assert run(home, "export", "s", "--format", "offprompt", str(out)) == EXIT_OK
    back = [Message.from_json(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert back == messages


def test_migrate_chatstore_to_llamaindex_and_offprompt(home: Path, tmp_path: Path, capsys) -> None:
    source = tmp_path / "store.json"
    write_chatstore(source)
    single = tmp_path / "bob.json"
    assert (
        main(
            [
                "migrate",
                "--from",
                "llamaindex-chatstore",
                "--to",
                "llamaindex",
                str(source),
                str(single),
                "--session",
                "bob",
            ]
        )
        == EXIT_OK
    )
    lines = tmp_path / "bob.jsonl"
    assert (
        main(["migrate", "--from", "llamaindex", "--to", "offprompt", str(single), str(lines)])
        == EXIT_OK
    )
    back = [Message.from_json(line) for line in lines.read_text(encoding="utf-8").splitlines()]
    assert [m.role for m in back] == ["user", "assistant", "user", "assistant"]
    assert back[0].images[0].width == 24
    # one session into a several-session format: keyed by --session, else the file stem
    store_file = tmp_path / "again.json"
    assert (
        main(
            [
                "migrate",
                "--from",
                "offprompt",
                "--to",
                "llamaindex-chatstore",
                str(lines),
                str(store_file),
            ]
        )
        == EXIT_OK
    )
    assert list(json.loads(store_file.read_text(encoding="utf-8"))["store"]) == ["bob"]


def test_unknown_session_in_a_chatstore(tmp_path: Path, capsys) -> None:
    source = tmp_path / "store.json"
    write_chatstore(source)
    code = main(
        [
            "migrate",
            "--from",
            "llamaindex-chatstore",
            "--to",
            "langchain",
            str(source),
            str(tmp_path / "o.json"),
            "--session",
            "carol",
        ]
    )
    assert code == EXIT_FAILURE
    assert "has no session 'carol'; it has: 'alice', 'bob'" in error_line(capsys)


@pytest.mark.parametrize(
    ("fmt", "content", "expected"),
    [
        ("langchain", '[{"type": "human", "data": {"content": "hi"', "malformed JSON"),
        ("offprompt", '{"role": "user", "content": []}\n{"role": "robot"}\n', "line 2"),
        ("offprompt", '{"role": "user", "content": []}\n{"role": "us', "line 2"),
        ("griptape", "", "malformed JSON"),
        ("llamaindex-chatstore", '{"store": 3}', "not a SimpleChatStore document"),
        ("llamaindex", '{"role": "user"}', "not a valid llamaindex file"),
    ],
)
def test_malformed_input_is_one_line_and_stores_nothing(
    home: Path, tmp_path: Path, capsys, fmt: str, content: str, expected: str
) -> None:
    source = tmp_path / "bad.json"
    source.write_text(content, encoding="utf-8")
    assert run(home, "import", "--format", fmt, str(source)) == EXIT_FAILURE
    assert expected in error_line(capsys)
    assert not (home / "memory.db").exists()


def test_wrong_format_names_the_likely_one(tmp_path: Path, capsys) -> None:
    source = tmp_path / "g.json"
    write_griptape(source)
    code = main(
        [
            "migrate",
            "--from",
            "langchain",
            "--to",
            "offprompt",
            str(source),
            str(tmp_path / "o.jsonl"),
        ]
    )
    assert code == EXIT_FAILURE
    line = error_line(capsys)
    assert "is not a valid langchain file" in line and "try --from griptape" in line
    assert not (tmp_path / "o.jsonl").exists()


def test_failed_conversion_leaves_an_existing_output_untouched(tmp_path: Path, capsys) -> None:
    source = tmp_path / "bad.json"
    source.write_text("[{", encoding="utf-8")
    out = tmp_path / "out.json"
    out.write_text("precious", encoding="utf-8")
    assert (
        main(["migrate", "--from", "langchain", "--to", "griptape", str(source), str(out)])
        == EXIT_FAILURE
    )
    error_line(capsys)
    assert out.read_text(encoding="utf-8") == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "out.json"]


@pytest.mark.parametrize("where", ["parent-is-a-file", "missing-directory", "is-a-directory"])
def test_unwritable_output(tmp_path: Path, capsys, where: str) -> None:
    source = tmp_path / "g.json"
    write_griptape(source)
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    out = {
        "parent-is-a-file": blocker / "out.json",
        "missing-directory": tmp_path / "nope" / "out.json",
        "is-a-directory": tmp_path,
    }[where]
    assert (
        main(["migrate", "--from", "griptape", "--to", "langchain", str(source), str(out)])
        == EXIT_FAILURE
    )
    assert f"cannot write {out}" in error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "g.json"]


def test_unknown_session(home: Path, tmp_path: Path, capsys) -> None:
    assert run(home, "show", "nobody") == EXIT_FAILURE
    assert "unknown session 'nobody': no store at" in error_line(capsys)
    assert not home.exists()  # looking does not create a store
    source = tmp_path / "g.json"
    write_griptape(source)
    assert run(home, "import", "-f", "griptape", str(source)) == EXIT_OK
    capsys.readouterr()
    assert (
        run(home, "export", "nobody", "--format", "langchain", str(tmp_path / "o.json"))
        == EXIT_FAILURE
    )
    assert "unknown session 'nobody'" in error_line(capsys)
    assert run(home, "show", "bad\x00id") == EXIT_FAILURE
    assert "control character" in error_line(capsys)


def test_a_store_path_that_is_not_a_store(home: Path, capsys) -> None:
    home.mkdir()
    (home / "memory.db").write_text("my notes, not a database\n", encoding="utf-8")
    assert run(home, "inspect") == EXIT_FAILURE
    assert "is not a SQLite database" in error_line(capsys)
    assert (home / "memory.db").read_text(encoding="utf-8") == "my notes, not a database\n"


def test_home_that_is_a_file(tmp_path: Path, capsys) -> None:
    home = tmp_path / "home"
    home.write_text("x", encoding="utf-8")
    assert run(home, "inspect") == EXIT_FAILURE
    assert "is not a directory" in error_line(capsys)


def test_missing_input_file(home: Path, tmp_path: Path, capsys) -> None:
    assert run(home, "import", "--format", "langchain", str(tmp_path / "none.json")) == EXIT_FAILURE
    assert "does not exist" in error_line(capsys)


def test_input_that_is_not_utf8(home: Path, tmp_path: Path, capsys) -> None:
    source = tmp_path / "bin.json"
    source.write_bytes(b"\xff\xfe\x00garbage")
    assert run(home, "import", "--format", "langchain", str(source)) == EXIT_FAILURE
    assert "is not UTF-8 text" in error_line(capsys)


def test_empty_input_imports_nothing(home: Path, tmp_path: Path, capsys) -> None:
    source = tmp_path / "empty.jsonl"
    source.write_text("\n", encoding="utf-8")
    assert run(home, "import", "--format", "offprompt", str(source)) == EXIT_OK
    assert "holds no messages; nothing imported" in capsys.readouterr().out
    assert not (home / "memory.db").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["read", "ns", "--page", "0"], "must be 1 or more, got 0"),
        (["query", "ns", "x", "--top", "many"], "expected a whole number, got 'many'"),
        (["export", "s", "out.json"], "the following arguments are required: --format"),
        (["import", "--format", "csv", "in.csv"], "invalid choice: 'csv'"),
        (["migrate", "--from", "langchain", "in", "out"], "required: --to"),
        (["inspect", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv: list[str], expected: str, capsys) -> None:
    assert main(argv) == EXIT_USAGE
    assert expected in error_line(capsys)


def test_help_and_version_exit_0(capsys) -> None:
    assert main(["--help"]) == EXIT_OK
    assert "migrate" in capsys.readouterr().out
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("offprompt ")


def test_demo_is_found_through_its_entry_point(monkeypatch, home: Path, capsys) -> None:
    import offprompt.cli as cli

    # make setup installs the demo distribution: the entry point names its main
    # private-ok: the CLI's entry-point lookup is the subject
    found = cli._demo_main()
    assert found is not None and found.__module__ == "offprompt_demo.demo"

    calls: list[str | None] = []
    monkeypatch.setattr(
        cli, "_demo_main", lambda: lambda: calls.append(os.environ.get("OFFPROMPT_HOME")) or 0
    )
    monkeypatch.setenv("OFFPROMPT_HOME", "unused")
    assert main(["--home", str(home), "demo"]) == EXIT_OK
    assert calls == [str(home)]


def test_demo_not_installed_says_what_to_install(monkeypatch, home: Path, capsys) -> None:
    import offprompt.cli as cli

    monkeypatch.setattr(cli, "_demo_main", lambda: None)
    assert main(["--home", str(home), "demo"]) == 1
    line = error_line(capsys)
    assert "offprompt demo is not installed: pip install offprompt-demo" in line
    assert not home.exists()


def test_inputs_that_are_not_regular_files_or_too_big_exit_2(
    home: Path, tmp_path: Path, capsys
) -> None:
    """Issue 14 item 7: devices, FIFOs and directories are refused; so is a file over the
    size limit, which --max-input-mb raises."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = str(tmp_path / "o.json")
    for path, expected in [
        ("/dev/zero", "not a regular file"),
        (str(fifo), "not a regular file"),
        (str(tmp_path), "is a directory"),
    ]:
        assert run(home, "import", "--format", "offprompt", path) == EXIT_USAGE
        assert expected in error_line(capsys)
        assert run(home, "migrate", "--from", "langchain", "--to", "offprompt", path, out) == 2
        assert expected in error_line(capsys)
    big = tmp_path / "big.jsonl"
    line = json.dumps(Message.user("x" * 1000).to_dict()) + "\n"
    big.write_text(line * 1500, encoding="utf-8")  # about 1.6 MiB
    assert run(home, "import", "--format", "offprompt", "--max-input-mb", "1", str(big)) == 2
    assert "over the 1 MiB limit (raise it with --max-input-mb)" in error_line(capsys)
    assert not (home / "memory.db").exists()
    assert run(home, "import", "--format", "offprompt", "--max-input-mb", "2", str(big)) == EXIT_OK
    with SQLiteStore(home / "memory.db") as store:
        assert store.count("big") == 1500
