"""``offprompt --store postgresql://...``: the commands on a real PostgreSQL server (the
throwaway cluster), in a subprocess, with nothing written to the home's memory.db."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from cli.cli_helpers import write_langchain
from postgres_testing import Cluster

from offprompt.stores import PostgresStore


def _url(cluster: Cluster, dsn: str) -> str:
    schema = dsn.rsplit("search_path=", 1)[1]
    return (
        f"postgresql://postgres@/postgres?host={quote(str(cluster.socket_dir))}"
        f"&port={cluster.port}&options={quote('-csearch_path=' + schema)}"
    )


def test_import_inspect_show_and_forget_on_a_postgres_store(
    cli, home: Path, tmp_path: Path, postgres_cluster: Cluster, postgres_dsn: str
) -> None:
    url = _url(postgres_cluster, postgres_dsn)
    source = tmp_path / "chat.json"
    write_langchain(source)
    done = cli("--store", url, "import", "--format", "langchain", str(source))
    assert done.returncode == 0, done.stderr
    assert "imported 5 messages" in done.stdout and "postgresql://" in done.stdout
    assert not (home / "memory.db").exists()
    with PostgresStore(postgres_dsn) as store:  # really on the server
        assert [i.session_id for i in store.sessions()] == ["chat"]
        assert store.count("chat") == 5
    listed = cli("inspect", "--store", url, "--json")  # --store after the command too
    assert listed.returncode == 0, listed.stderr
    assert '"chat"' in listed.stdout
    shown = cli("--store", url, "show", "chat")
    assert shown.returncode == 0, shown.stderr
    assert "Weather in Zürich?" in shown.stdout


def test_store_errors_are_one_line_and_keep_the_password_out(cli, tmp_path: Path) -> None:
    done = cli("--store", f"postgresql://u:hunter2@/db?host={tmp_path}&port=5999", "inspect")
    assert done.returncode == 1
    assert str(tmp_path) in done.stderr and "hunter2" not in done.stderr + done.stdout
    assert done.stderr.startswith("offprompt: error: ") and done.stderr.count("\n") == 1
    bad = cli("--store", "mysql://x", "inspect")
    assert bad.returncode == 2 and "postgresql://" in bad.stderr
