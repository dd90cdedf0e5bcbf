"""`lessonloop serve` over a shared store: PostgreSQL + a Chroma server (both started here),
with another process (this test) reading and writing the same store while it serves."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memory import HashEmbedder, LessonDraft, Memory
from tests.console.server import console
from tests.memory.memory_servers import (
    SERVER_MARKS,
    ChromaServer,
    Postgres,
    start_chroma,
    start_postgres,
)

pytestmark = SERVER_MARKS


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Postgres, ChromaServer]]:
    pg, chroma = start_postgres(), start_chroma()
    try:
        yield pg, chroma
    finally:
        chroma.stop()
        pg.stop()


def test_console_on_postgres_and_a_chroma_server(
    servers: tuple[Postgres, ChromaServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg, chroma = servers
    url = pg.create_database("console")
    with Memory.open(url, embedder=HashEmbedder(), chroma_url=chroma.url) as memory:
        drafts = [
            (
                "ValueError: could not convert '$5' to float",
                "amounts carry a dollar sign",
                "strip '$'",
            ),
            ("KeyError: '\\ufeffamount'", "the CSV starts with a byte order mark", "utf-8-sig"),
        ]
        added = [
            memory.add(LessonDraft(scope="shared", error_type="E", symptom=s, root_cause=c, fix=f))
            for s, c, f in drafts
        ]
        ids = [a.lesson.id for a in added if a.lesson is not None]
        assert len(ids) == 2
        monkeypatch.setenv("LESSONLOOP_CHROMA_URL", chroma.url)
        with console(tmp_path / "home", url, tmp_path / "r") as base, httpx.Client() as web:
            listing = web.get(base + "lessons")
            assert listing.status_code == 200 and all(i in listing.text for i in ids)
            found = web.get(
                base + "lessons", params={"q": "dollar sign amounts", "scope": "shared"}
            )
            assert ids[0] in found.text
            page = web.get(f"{base}lessons/{ids[1]}").text
            token = re.search(r'name="csrf" value="([^"]+)"', page)
            assert token is not None
            done = web.post(f"{base}lessons/{ids[1]}/approve", data={"csrf": token.group(1)})
            assert done.status_code == 303
            # The other process sees the change while the console still serves.
            assert memory.get(ids[1]).status == "validated"
