"""Issue 26 item 6: the reference card on real outputs no one here wrote.

Every file in ``tests/task_memory/gallery/`` (sources in its README) is stored as one tool
output; the reference the model receives (the sentence, then the card) must stay within
300 tokens, name the right kind and every top-level key of a JSON document, and equal
the golden file ``gallery/<file>.card.txt`` committed beside it, so that a change in what
the model sees shows in review.

To regenerate the golden files after an intended change of the card::

    OFFPROMPT_REGENERATE_CARDS=1 .venv/bin/python -m pytest tests/task_memory/test_card_gallery.py

then read the diff (``git diff tests/task_memory/gallery``) before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from offprompt.artifacts import BlobArtifact, ImageArtifact, TextArtifact
from offprompt.task_memory import TaskMemory

GALLERY = Path(__file__).parent / "gallery"
REGENERATE = os.environ.get("OFFPROMPT_REGENERATE_CARDS") == "1"
BUDGET = 300  # TaskMemory's default preview_tokens: the whole reference

#: file -> the kind the card must name.
ITEMS = {
    "loghub_Android.log": "text",
    "loghub_Apache.log": "text",  # starts with "[": looks like JSON, is not
    "loghub_BGL.log": "text",
    "loghub_HDFS.log": "text",
    "loghub_HPC.log": "text",
    "loghub_Hadoop.log": "text",  # "2015-10-18 18:01:47,978 INFO ...": one comma per line
    "loghub_HealthApp.log": "text",
    "loghub_Linux.log": "text",
    "loghub_Android_structured.csv": "csv",  # quoted fields holding commas
    "loghub_HDFS_structured.csv": "csv",
    "loghub_Hadoop_structured.csv": "csv",
    "numpy_umath_validation_log2.csv": "csv",
    "numpy_mt19937_testset.csv": "csv",
    "twitter_trimmed.json": "json",
    "citm_catalog_trimmed.json": "json",
    "pip_bom.cdx.json": "json",
    "setuptools.schema.json": "json",
    "jsonschema_draft202012_metaschema.json": "json",
    "loghub_Hadoop_rows.ndjson": "ndjson",  # a header array, then one array per row
    "loghub_HDFS_records.ndjson": "ndjson",
    "importlinter_index.html": "text",
    "huggingface_modelcard_template.md": "text",
    "importlinter_logo.png": "image",
    "networkx_atlas.dat.gz": "binary",
}


@pytest.fixture(scope="module")
def memory() -> TaskMemory:
    with TaskMemory(min_tokens=0, index="sync") as m:
        yield m  # type: ignore[misc]


def _artifact(name: str, namespace: str) -> TextArtifact | BlobArtifact | ImageArtifact:
    path = GALLERY / name
    if name.endswith(".png"):
        return ImageArtifact(path.read_bytes(), name=namespace)  # format and size from the bytes
    if name.endswith(".gz"):
        return BlobArtifact(path.read_bytes(), name=namespace)
    # Decoded from the bytes: the text (CRLF included) as the tool would return it.
    return TextArtifact(path.read_bytes().decode("utf-8"), name=namespace)


def test_every_gallery_file_is_an_item() -> None:
    files = {p.name for p in GALLERY.iterdir()} - {"README.md"}
    data = {f for f in files if not f.endswith(".card.txt")}
    assert data == set(ITEMS)
    assert {f"{name}.card.txt" for name in ITEMS} <= files or REGENERATE


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_card_of_a_real_output(memory: TaskMemory, name: str) -> None:
    namespace = "gallery-" + name.replace(".", "-")
    info = memory.process_output("fetch", "call", _artifact(name, namespace))
    reference = str(info.value)
    assert memory.tokenizer.count(reference) <= BUDGET
    assert f"[stored output] kind: {ITEMS[name]} |" in reference
    if ITEMS[name] == "json":
        document = json.loads((GALLERY / name).read_bytes())
        missing = [key for key in document if json.dumps(key) not in reference]
        assert not missing, f"top-level keys not named in the card: {missing}"
    golden = GALLERY / f"{name}.card.txt"
    if REGENERATE:
        golden.write_bytes((reference + "\n").encode("utf-8"))
    assert golden.read_bytes().decode("utf-8") == reference + "\n", (
        f"the card of {name} changed; if that is intended, regenerate the golden files "
        "(OFFPROMPT_REGENERATE_CARDS=1, see this module's docstring) and review the diff"
    )


@pytest.mark.parametrize(
    "name",
    [
        "loghub_HDFS.log",
        "twitter_trimmed.json",
        "citm_catalog_trimmed.json",
        "loghub_Android_structured.csv",
    ],
)
def test_the_docs_show_the_real_cards(name: str) -> None:
    page = Path(__file__).parents[2] / "docs/concepts/task-memory.md"
    card = (GALLERY / f"{name}.card.txt").read_bytes().decode("utf-8")
    assert f"```text\n{card}```" in page.read_text(encoding="utf-8"), (
        f"docs/concepts/task-memory.md's card of {name} is not the golden one"
    )
