"""Images by reference: bytes stored for a conversation that repeats one screenshot.

Side by side, in one run: offprompt's ``SQLiteStore`` (content-addressed blobs, one copy
per partition) against the same messages stored inline (base64 in each row, what a
chat store that serialises messages as JSON does - LangChain's SQL history, LlamaIndex's
``SQLAlchemyChatStore``). Prints one line per case and the ratio.

    python benchmarks/bench_images.py --quick    # 100 repeats of a ~150 KB screenshot
    python benchmarks/bench_images.py            # 1,000 repeats
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from PIL import Image

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.conversation import ConversationMemory
from offprompt.messages import Message
from offprompt.stores import SQLiteStore


def screenshot(size: tuple[int, int] = (256, 192)) -> bytes:
    rnd = random.Random(7)
    buffer = io.BytesIO()
    Image.frombytes("RGB", size, rnd.randbytes(size[0] * size[1] * 3)).save(buffer, "PNG")
    return buffer.getvalue()


def messages(image: bytes, repeats: int) -> list[Message]:
    out = []
    for i in range(repeats):
        shot = ImageArtifact(value=image, format="png", width=256, height=192)
        out.append(Message.user([TextArtifact(value=f"step {i}: what changed?"), shot]))
        out.append(Message.assistant(f"step {i}: nothing new"))
    return out


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 repeats instead of 1,000")
    args = parser.parse_args()
    repeats = 100 if args.quick else 1000
    image = screenshot()
    batch = messages(image, repeats)
    with tempfile.TemporaryDirectory() as tmp:
        ours = Path(tmp) / "offprompt.db"
        store = SQLiteStore(ours)
        memory = ConversationMemory(store, "s")
        start = time.perf_counter()
        for i in range(0, len(batch), 2):
            memory.add_messages(batch[i : i + 2])
        add_s = time.perf_counter() - start
        start = time.perf_counter()
        back = memory.messages()
        read_s = time.perf_counter() - start
        assert back[-2].images[0].value == image
        store.checkpoint()
        blobs = store.blob_count()
        store.close()
        ours_bytes = db_bytes(ours)

        inline = Path(tmp) / "inline.db"
        conn = sqlite3.connect(inline)
        conn.execute("CREATE TABLE m (session TEXT, seq INTEGER, body TEXT)")
        for seq, message in enumerate(batch):
            conn.execute(
                "INSERT INTO m VALUES (?, ?, ?)", ("s", seq, json.dumps(message.to_dict()))
            )
        conn.commit()
        conn.close()
        inline_bytes = db_bytes(inline)
    print(
        f"images_by_reference repeats={repeats} image={len(image)} B | "
        f"offprompt_sqlite {ours_bytes / 1e6:.2f} MB ({blobs} blob) add {add_s:.2f} s "
        f"read {read_s * 1e3:.0f} ms | inline_json_sqlite {inline_bytes / 1e6:.2f} MB | "
        f"ratio inline/offprompt {inline_bytes / ours_bytes:.1f}x"
    )


if __name__ == "__main__":
    main()
