"""Full game transcripts (`--transcripts DIR`): real games through the CLI, each game's
file checked against its record; the cap and the folder's rules on their own."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from commands import invoke
from paths import BADBOT
from transcripts import check_transcript

from arbiter.engines.process import EngineSpec
from arbiter.executors.jobs import ExecutorSettings
from arbiter.protocol.session import GameLog
from arbiter.results.records import GameRecord, Termination, read_records
from arbiter.results.transcripts import CAP, TranscriptFolder
from arbiter.rules import Variant
from arbiter.runs.run import Plan


def test_a_match_writes_each_games_transcript_from_its_worker_processes(tmp_path: Path) -> None:
    crasher = f"crasher={sys.executable} {BADBOT} crash --after 3"
    folder = tmp_path / "transcripts"
    records = tmp_path / "r.jsonl"
    done = invoke(
        "match",
        "random",
        crasher,
        "--islands",
        "4",
        "--size",
        "5",
        "--games",
        "2",
        "--tc",
        "5+0",
        "-c",
        "2",
        "-q",
        "--records",
        str(records),
        "--transcripts",
        str(folder),
    )
    assert done.returncode == 0, done.stderr
    games = list(read_records(records))
    assert {g.termination for g in games} == {Termination.CRASH}
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{g.game_id}.log" for g in games)
    for game in games:
        check_transcript(folder / f"{game.game_id}.log", game)
        assert "closed its stdout" in (folder / f"{game.game_id}.log").read_text()


def test_a_transcripts_folder_must_be_one(tmp_path: Path) -> None:
    taken = tmp_path / "file"
    taken.write_text("mine\n")
    args = ["random", "skeleton", "--size", "7", "--games", "1", "--tc", "5+0", "-q"]
    refused = invoke("match", *args, "--transcripts", str(taken))
    assert refused.returncode == 2 and "is a file" in refused.stderr
    assert taken.read_text() == "mine\n"
    refused = invoke("match", *args, "--transcripts", str(tmp_path / "no" / "such"))
    assert refused.returncode == 2 and "cannot make the transcripts folder" in refused.stderr


def test_a_transcript_is_never_written_over(tmp_path: Path) -> None:
    record = GameRecord(
        game_id="r1/../x",
        variant={"size": 5, "islands": 4, "pie": True},
        seat1="a",
        seat2="b",
        tc={"seat1": "1+0", "seat2": "1+0"},
        started="s",
        moves=["c3"],
        winner="a",
        termination=Termination.RESIGN,
    )
    folder = TranscriptFolder(tmp_path / "t")
    first = folder.write(record, "one\n")
    second = folder.write(record, "two\n")
    assert first == tmp_path / "t" / "r1_.._x.log" and second == tmp_path / "t" / "r1_.._x.2.log"
    assert first.read_text() == "one\n" and second.read_text() == "two\n"
    assert folder.notes() == []


def test_a_sandboxed_engine_cannot_read_the_transcripts(tmp_path: Path) -> None:
    specs = {"a": EngineSpec(argv=("a",), sandbox=True), "b": EngineSpec(argv=("b",))}
    folder = TranscriptFolder(tmp_path / "t")
    plan = Plan(
        settings=ExecutorSettings(engines=specs),
        games=iter(()),
        total=0,
        left=0,
        variant=Variant(),
        transcripts=folder,
    )
    assert str((tmp_path / "t").resolve()) in plan.settings.engines["a"].hidden
    assert plan.settings.engines["b"].hidden == ()
    assert plan.settings.referee.transcript_bytes == CAP
    plain = Plan(
        settings=ExecutorSettings(engines=specs), games=iter(()), total=0, left=0, variant=Variant()
    )
    assert plain.settings.referee.transcript_bytes == 0


async def test_a_long_game_keeps_its_start_and_its_end() -> None:
    log = GameLog(400)  # 300 bytes of head, 100 of tail
    sent = [f"{n} play b c{n % 9 + 1}\n".encode() for n in range(1, 60)]
    for data in sent:
        log.add(1, True, data)
    lines = log.lines(["a", "b"])
    kept = [line.split(": ", 1)[1] for line in lines if not line.startswith("...")]
    whole = [d.decode().strip() for d in sent]
    [marker] = [i for i, line in enumerate(lines) if line.startswith("...")]
    head, tail = kept[:marker], kept[marker:]
    assert head == whole[: len(head)] and len("".join(f"{h}\n" for h in head)) <= 300
    # The tail may begin inside a line; every line after its first is whole, and last.
    assert tail[1:] == whole[len(whole) - len(tail) + 1 :] and whole[-1] == tail[-1]
    dropped = int(lines[marker].split()[1])
    assert dropped + 300 + sum(len(t) + 1 for t in tail) == sum(map(len, sent))
    assert 0 < sum(len(t) + 1 for t in tail) <= 100
    assert all(
        re.match(r"^\d+ >a\(1\): \d+ play b c\d$", line) or "play" not in line
        for line in lines
        if not line.startswith("...")
    )


@pytest.mark.parametrize("cut", [1, 3, 7])
async def test_lines_cut_across_chunks_are_whole(cut: int) -> None:
    log = GameLog(1 << 16)
    answer = b"=12 c3\n\n=13\n\n"
    for i in range(0, len(answer), cut):
        log.add(2, False, answer[i : i + cut])
    log.add(2, False, b"=14 unfinished")
    texts = [line.split("):", 1)[1] for line in log.lines(["a", "b"])]
    assert texts == [" =12 c3", "", " =13", "", " =14 unfinished"]
