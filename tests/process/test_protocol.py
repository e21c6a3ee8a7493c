"""The wire format: codec properties, golden transcripts, and real engines at the other end."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import trio
import trio.testing
from hypothesis import example, given
from hypothesis import strategies as st
from paths import ROOT

from arbiter.engines.process import EngineSpec, open_engine
from arbiter.errors import EngineFailure, EngineTerminatedError, EngineTimeout, ProtocolError
from arbiter.protocol import (
    Command,
    FramingError,
    ResponseReader,
    format_command,
    format_response,
    parse_command,
    preprocess,
)
from arbiter.protocol.session import EngineSession

TRANSCRIPTS = sorted((ROOT / "protocol" / "transcripts").glob("*.txt"))
SKELETON = ROOT / "arbiter" / "bots" / "skeleton.py"
GNUGO = shutil.which("gnugo") or shutil.which("/usr/games/gnugo")

token = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="#"),
    min_size=1,
    max_size=12,
)
name = token.filter(lambda t: not t.isdigit())


@given(
    cmd_id=st.one_of(st.none(), st.integers(0, 10**9)), name=name, args=st.lists(token, max_size=4)
)
def test_command_round_trip(cmd_id: int | None, name: str, args: list[str]) -> None:
    line = format_command(cmd_id, name, *args).decode()
    assert line.endswith("\n") and line.count("\n") == 1
    assert parse_command(line) == Command(cmd_id, name, tuple(args))


response_line = (
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=40)
    .map(str.strip)
    .filter(bool)
)


@given(
    cmd_id=st.one_of(st.none(), st.integers(0, 10**6)),
    ok=st.booleans(),
    lines=st.lists(response_line, max_size=4),
    chunk=st.integers(1, 64),
)
def test_response_round_trip_in_any_chunking(
    cmd_id: int | None, ok: bool, lines: list[str], chunk: int
) -> None:
    text = "\n".join(lines)
    wire = format_response(cmd_id, ok, text).encode()
    reader = ResponseReader()
    got = []
    for i in range(0, len(wire), chunk):
        got += reader.feed(wire[i : i + chunk])
    assert len(got) == 1 and not reader.pending
    assert (got[0].id, got[0].ok, got[0].text) == (cmd_id, ok, text)


def test_preprocessing_follows_gtp() -> None:
    assert preprocess("\t12  genmove\tb # a comment\r") == "12  genmove b"
    assert preprocess("  # only a comment") == ""
    assert preprocess("na\x01me\x7f") == "name"
    assert parse_command("   \n") is None
    assert parse_command("7 name") == Command(7, "name", ())


def test_reader_tolerates_what_real_engines_send() -> None:
    reader = ResponseReader()
    got = reader.feed(b"\r\n\n= \r\n\r\n=2 f5 \r\n\r\n?3 no\n\n")
    got_tuples = [(r.id, r.ok, r.text) for r in got]
    assert got_tuples == [(None, True, ""), (2, True, "f5"), (3, False, "no")]


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"hello there\n\n", "expected a response starting with '=' or '?'"),
        (b"=1f5\n\n", "expected a space after the id"),
        (b"x" * 70_000, "without a newline"),
        (b"=1 " + b"y" * 70_000 + b"\n", "limit"),
    ],
)
def test_reader_rejects_garbage_and_runaway_lines(wire: bytes, message: str) -> None:
    with pytest.raises(FramingError, match=message):
        ResponseReader().feed(wire)


def test_reader_caps_a_whole_response() -> None:
    reader = ResponseReader(max_response=1000)
    with pytest.raises(FramingError, match="over 1000 bytes"):
        reader.feed(b"=1 a\n" + b"line of text\n" * 200)


def parse_transcript(path: Path) -> list[tuple[list[str], list[str]]]:
    """Blocks of (command lines, response lines) in the order they appear."""
    blocks: list[tuple[list[str], list[str]]] = []
    for raw in path.read_text().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        kind, text = raw[0], raw[2:] if len(raw) > 1 else ""
        assert kind in "<>", f"{path.name}: bad line {raw!r}"
        if kind == ">":
            if not blocks or blocks[-1][1]:
                blocks.append(([], []))
            blocks[-1][0].append(text)
        else:
            blocks[-1][1].append(text)
    return blocks


def expected_results(lines: list[str]) -> list[tuple[int, bool, str]]:
    """Independent reading of response lines: (id, ok, text) per response."""
    out: list[tuple[int, bool, str]] = []
    current: list[str] = []
    for line in lines:
        if line.strip() == "":
            if current:
                head, rest = current[0], current[1:]
                sign = head[0]
                digits = "".join(ch for ch in head[1:].split(" ")[0])
                first = head[1 + len(digits) :].strip()
                text = "\n".join([first, *[r.rstrip() for r in rest]]).strip("\n")
                out.append((int(digits), sign == "=", text))
                current = []
            continue
        current.append(line)
    return out


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
async def test_transcripts_drive_the_real_session(path: Path) -> None:
    """The referee side sends exactly the transcript's commands and reads its responses."""
    blocks = parse_transcript(path)
    referee_end, engine_end = trio.testing.memory_stream_pair()
    session = EngineSession(referee_end, referee_end, "scripted")

    async def engine() -> None:
        buffer = b""
        for commands, responses in blocks:
            for expected in commands:
                while b"\n" not in buffer:
                    buffer += await engine_end.receive_some()
                line, buffer = buffer.split(b"\n", 1)
                assert line.decode() == expected
            await engine_end.send_all("".join(r + "\n" for r in responses).encode())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine)
        for commands, responses in blocks:
            words = [c.split()[1:] for c in commands]
            ids = await session.send_many(words)
            assert ids == [int(c.split()[0]) for c in commands]
            want = expected_results(responses)
            for cmd_id in ids:
                response = await session.receive()
                assert (response.id, response.ok, response.text) == want.pop(0)
                assert response.id == cmd_id
    assert blocks, "empty transcript"


@pytest.mark.parametrize("name", ["errors.txt", "handshake.txt", "hex.txt"])
async def test_skeleton_agrees_with_transcript_verdicts(name: str) -> None:
    """The bot skeleton answers = or ? exactly where the golden transcript does."""
    blocks = parse_transcript(ROOT / "protocol" / "transcripts" / name)
    async with open_engine(EngineSpec((sys.executable, str(SKELETON))), handshake=False) as eng:
        for commands, responses in blocks:
            words = [c.split()[1:] for c in commands]
            if any(w[0] in ("genmove", "showboard", "name", "version") for w in words):
                continue  # answers that legitimately differ between engines
            got = await eng.session.pipeline_responses(words, timeout=5)
            want = expected_results(responses)
            assert [r.ok for r in got] == [w[1] for w in want], commands


async def test_wrong_id_is_a_protocol_error() -> None:
    referee_end, engine_end = trio.testing.memory_stream_pair()
    session = EngineSession(referee_end, referee_end, "e")
    await session.send("name")
    await engine_end.send_all(b"=7 x\n\n")
    with pytest.raises(ProtocolError, match="echo the command id"):
        await session.receive()
    with pytest.raises(EngineTerminatedError, match="unusable"):
        await session.send("name")


async def test_failure_answer_and_timeout_are_typed() -> None:
    referee_end, engine_end = trio.testing.memory_stream_pair()
    session = EngineSession(referee_end, referee_end, "e")

    async def answer() -> None:
        await engine_end.receive_some()
        await engine_end.send_all(b"?1 nope\n\n")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        with pytest.raises(EngineFailure, match="nope"):
            await session.command("boardsize", "12", timeout=5)
    with pytest.raises(EngineTimeout, match=r"within 0\.5 s"):
        await session.command("name", timeout=0.5)


@pytest.mark.skipif(GNUGO is None, reason="gnugo is not installed (apt-get install gnugo)")
@pytest.mark.gnugo
async def test_gnugo_as_a_live_gtp_peer() -> None:
    """GNU Go, a GTP v2 engine written elsewhere, speaks our framing."""
    assert GNUGO is not None
    async with open_engine(EngineSpec((GNUGO, "--mode", "gtp"))) as engine:
        assert engine.info.name == "GNU Go"
        assert engine.info.protocol_version == "2"
        assert {"genmove", "play", "boardsize", "quit"} <= engine.info.commands
        s = engine.session
        assert await s.command("known_command", "genmove", timeout=5) == "true"
        assert await s.command("known_command", "atoll-islands", timeout=5) == "false"
        with pytest.raises(EngineFailure, match="unknown command"):
            await s.command("atoll-islands", "8", timeout=5)
        # Several commands back to back come back in order with their ids.
        results = await s.pipeline(
            [("boardsize", "9"), ("clear_board",), ("play", "b", "e5"), ("genmove", "w")],
            timeout=10,
        )
        assert results[:3] == ["", "", ""] and results[3]
        board = await s.command("showboard", timeout=5)
        assert "\n" in board  # a multi-line answer
    assert engine.returncode == 0  # it exited on quit


def _read_all(chunks: list[bytes]) -> list[tuple[int | None, bool, str]] | str:
    reader = ResponseReader(max_line=200, max_response=1000)
    out: list[tuple[int | None, bool, str]] = []
    try:
        for chunk in chunks:
            out += [(r.id, r.ok, r.text) for r in reader.feed(chunk)]
    except FramingError:
        return "error"
    return out


wire_text = st.lists(
    st.sampled_from(["=1", "=2 f5", "? no", "=3", " ", "", "  x", "=", "?7 a b", "junk", "\r"]),
    max_size=12,
).map(lambda lines: ("\n".join(lines) + "\n\n").encode())


@given(data=wire_text, cuts=st.lists(st.integers(0, 200), max_size=5))
def test_how_the_pipe_splits_the_bytes_never_changes_the_reading(
    data: bytes, cuts: list[int]
) -> None:
    points = sorted({c for c in cuts if 0 < c < len(data)})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert _read_all([data]) == _read_all(chunks)


def test_a_flood_of_blank_lines_is_cut_off() -> None:
    reader = ResponseReader()
    with pytest.raises(FramingError, match="blank lines"):
        for _ in range(100):
            reader.feed(b"\n" * 1000)


@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_only_an_empty_line_ends_a_response(chunk: int) -> None:
    # A board drawing: its lines of spaces belong to the response, on every read path.
    wire = b"=5 \n  a b c\n     \n1 . X .\n   \n\n=6 next\n\n"
    reader = ResponseReader()
    got = []
    for i in range(0, len(wire), chunk):
        got += reader.feed(wire[i : i + chunk])
    assert [(r.id, r.text) for r in got] == [(5, "  a b c\n\n1 . X ."), (6, "next")]


def test_a_line_of_control_characters_is_content_not_the_end() -> None:
    got = ResponseReader().feed(b"=1 board\n\x1b\nrest\n\n")
    assert [(r.id, r.text) for r in got] == [(1, "board\n\nrest")]


def _answer_to(cmd_id: int) -> st.SearchStrategy[str]:
    """Mostly the usual answer to command `cmd_id`, sometimes anything else."""
    usual = st.sampled_from([f"={cmd_id}"] * 3 + [f"={cmd_id} e5", f"={cmd_id}  e5 "])
    odd = st.sampled_from(
        [
            f"={cmd_id} \x01",
            f"={cmd_id} a\nb",
            f"?{cmd_id} no",
            f"={cmd_id}x",
            f"={cmd_id + 1}",
            "",
            "\r",
            f"={cmd_id} é",
        ]
    )
    return st.one_of(usual, usual, usual, odd)


batch_answer = st.tuples(
    _answer_to(1), _answer_to(2), _answer_to(3), st.lists(_answer_to(4), max_size=2)
).map(lambda b: "".join(x + "\n\n" for x in [*b[:3], *b[3]]).encode())


@given(
    data=batch_answer, cut=st.one_of(st.just(0), st.integers(1, 40)), blank=st.integers(190, 205)
)
@example(data=b"=1\n\n=2\n\n=3  e5 \n\n", cut=0, blank=190)
@example(data=b"=1\n\n=2\n\n=3 e5\n\n=4\n\n", cut=0, blank=190)
@example(data=b"=1\n\n=2\n\n=3 a\nb\n\n", cut=0, blank=190)
@example(data=b"=1\n\n=2\n\n=3 \xc3\xa9\n\n", cut=0, blank=190)
@example(data=b"=1\n\n=2\n\n=3 e5\n\n", cut=0, blank=197)
@example(data=b"=1\n\n=2\n\n=3 " + b"a" * 250 + b"\n\n", cut=0, blank=190)
def test_the_batch_shortcut_reads_exactly_as_the_reader_does(
    data: bytes, cut: int, blank: int
) -> None:
    # Commands 1-3 in flight: whatever comes back, in one read or two, the shortcut for
    # the usual answer must agree with the plain reader, failures included, and leave
    # it in the same state (a run of blank lines after it hits the cap at the same byte).
    def read(feed: str) -> list[tuple[int | None, bool, str]] | str:
        reader = ResponseReader(max_line=200, max_response=1000)
        out: list[tuple[int | None, bool, str]] = []
        try:
            for chunk in (data[:cut], data[cut:]) if cut else (data,):
                got = reader.feed_answers(chunk, 1, 3) if feed == "answers" else reader.feed(chunk)
                out += [(r.id, r.ok, r.text) for r in got]
            out += [(r.id, r.ok, r.text) for r in reader.feed(b"\n" * blank)]
        except FramingError as exc:
            return str(exc)
        return out

    assert read("answers") == read("plain")
