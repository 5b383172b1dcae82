"""A plain http answer's head as the proxy passes it on: held until complete, told to close."""

from __future__ import annotations

import pytest

from rubricgate.isolation.answer_head import MAX_HEAD, AnswerHeads, HeadTooLarge, closing, head_end, status_of

# -- failure paths first ------------------------------------------------------------------------


def test_a_head_past_the_limit_is_refused_whether_or_not_it_ends() -> None:
    with pytest.raises(HeadTooLarge):
        AnswerHeads().feed(b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * MAX_HEAD)
    with pytest.raises(HeadTooLarge):
        AnswerHeads().feed(b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * MAX_HEAD + b"\r\n\r\nbody")


@pytest.mark.parametrize("line", [b"HTTP/1.1 " + b"4" * 5000 + b" X", b"HTTP/1.1 20 OK", b"HTTP/1.1 2000 OK",
                                  b"HTTP/1.1 abc OK", b"SPDY/3 200 OK", b""])
def test_a_status_line_that_is_not_three_digits_has_no_status(line) -> None:
    assert status_of(line + b"\r\n") is None


def test_a_bare_lf_head_ends_at_its_blank_line_not_at_a_crlf_pair_in_the_body() -> None:
    body = b'{"a": "x\r\n\r\ny"}'
    heads = AnswerHeads()
    out = heads.feed(b"HTTP/1.1 200 OK\nContent-Length: %d\nConnection: keep-alive\n\n" % len(body) + body)
    assert out == b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
    assert heads.status == 200 and heads.done


def test_a_connection_header_goes_with_its_folded_lines_and_no_other_header_is_touched() -> None:
    head = b"HTTP/1.1 200 OK\r\nX-Req: a\r\n b\r\nConnection : keep-alive\r\n Transfer-Encoding: chunked\r\n" \
           b"KEEP-ALIVE:\ttimeout=5\r\nProxy-Connection: x\r\nContent-Length: 2"
    assert closing(head) == b"HTTP/1.1 200 OK\r\nX-Req: a\r\n b\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"


def test_interim_heads_pass_unchanged_and_the_final_one_is_read_and_closed() -> None:
    heads = AnswerHeads()
    out = heads.feed(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 429 Too Many Requests\r\n"
                     b"Retry-After: 30\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nno")
    assert out == (b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 429 Too Many Requests\r\n"
                   b"Retry-After: 30\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno")
    assert (heads.status, heads.retry_after) == (429, "30")


# -- as it arrives ------------------------------------------------------------------------------

def test_a_head_in_one_byte_pieces_is_held_then_passed_whole_and_the_body_as_it_comes() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
    heads = AnswerHeads()
    passed = [heads.feed(answer[i:i + 1]) for i in range(len(answer))]
    assert passed[:-1] == [b""] * (len(answer) - 1)
    assert passed[-1] == b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    assert heads.feed(b"data: 1\n\n") == b"data: 1\n\n" and heads.status == 200


def test_the_first_blank_line_of_either_kind_ends_the_head() -> None:
    assert head_end(b"A\r\nB\r\n\r\nC\n\n") == (4, 8)
    assert head_end(b"A\nB\n\nC\r\n\r\n") == (3, 5)
    assert head_end(b"A\r\nB\r\n") is None
