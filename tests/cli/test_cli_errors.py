"""Errors of the real ``offprompt`` command in a subprocess: one line, exit code, no traceback,
nothing partial left behind."""

from __future__ import annotations

from pathlib import Path

from cli.cli_helpers import one_error_line, write_griptape


def test_truncated_json_exits_1_and_creates_no_store(cli, home: Path, tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(
        '[{"type": "human", "data": {"content": "hi"}}, {"type": "ai", "da', encoding="utf-8"
    )
    done = cli("import", "--format", "langchain", str(source))
    assert done.returncode == 1
    assert "malformed JSON" in one_error_line(done)
    assert not (home / "memory.db").exists()


def test_wrong_format_for_from_exits_1_and_writes_nothing(cli, tmp_path: Path) -> None:
    source = tmp_path / "g.json"
    write_griptape(source)
    out = tmp_path / "out.json"
    done = cli(
        "migrate", "--from", "llamaindex-chatstore", "--to", "langchain", str(source), str(out)
    )
    assert done.returncode == 1
    assert "try --from griptape" in one_error_line(done)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_unknown_session_and_namespace_exit_1(cli, home: Path, tmp_path: Path) -> None:
    source = tmp_path / "g.json"
    write_griptape(source)
    assert cli("import", "--format", "griptape", str(source)).returncode == 0
    shown = cli("show", "nobody")
    assert shown.returncode == 1
    assert "unknown session 'nobody'" in one_error_line(shown) and "'g'" in shown.stderr
    queried = cli("query", "no-such-namespace", "anything")
    assert queried.returncode == 1
    assert "unknown namespace 'no-such-namespace'" in one_error_line(queried)


def test_unwritable_output_exits_1(cli, tmp_path: Path) -> None:
    source = tmp_path / "g.json"
    write_griptape(source)
    (tmp_path / "file").write_text("x", encoding="utf-8")
    done = cli(
        "migrate",
        "--from",
        "griptape",
        "--to",
        "langchain",
        str(source),
        str(tmp_path / "file" / "o.json"),
    )
    assert done.returncode == 1
    assert "cannot write" in one_error_line(done)


def test_not_a_store_exits_1_and_leaves_the_file(cli, home: Path) -> None:
    home.mkdir()
    (home / "memory.db").write_bytes(b"PK\x03\x04 a zip file")
    done = cli("inspect")
    assert done.returncode == 1
    assert "not a SQLite database" in one_error_line(done)
    assert (home / "memory.db").read_bytes() == b"PK\x03\x04 a zip file"


def test_usage_errors_exit_2(cli) -> None:
    for args, expected in (
        (["read", "ns", "--page", "0"], "must be 1 or more"),
        (["nope"], "invalid choice"),
    ):
        done = cli(*args)
        assert done.returncode == 2
        assert expected in one_error_line(done)


def test_import_of_dev_zero_exits_2_at_once(cli, home: Path) -> None:
    """Issue 14 item 7: a device is refused, not read forever."""
    done = cli("import", "--format", "offprompt", "/dev/zero", timeout=60)
    assert done.returncode == 2
    assert "not a regular file" in one_error_line(done)
    assert not (home / "memory.db").exists()
