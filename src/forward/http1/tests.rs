use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncWriteExt, ReadBuf};

use super::*;

// -- The request ------------------------------------------------------

fn encode(method: Method, headers: &[(&str, &[u8])], body: &[u8]) -> Vec<u8> {
    let mut head = RequestHead::new(&method, "/hook?x=1", body.len());
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("name");
        let value = HeaderValue::from_bytes(value).expect("value");
        head.forward(&name, &value);
    }
    let encoded = head.finish("app:3000", body);
    let mut wire = encoded.head;
    wire.extend_from_slice(encoded.rest);
    wire
}

#[test]
fn request_line_host_and_length() {
    let wire = encode(
        Method::POST,
        &[
            ("content-type", b"application/json"),
            ("host", b"hooks.example"),
        ],
        b"{}",
    );
    assert_eq!(
        wire,
        b"POST /hook?x=1 HTTP/1.1\r\n\
          content-type: application/json\r\n\
          host: hooks.example\r\n\
          content-length: 2\r\n\
          \r\n\
          {}"
    );
    let wire = encode(Method::POST, &[("x-a", b"1")], b"");
    assert_eq!(
        wire,
        b"POST /hook?x=1 HTTP/1.1\r\nx-a: 1\r\nhost: app:3000\r\ncontent-length: 0\r\n\r\n"
    );
}

#[test]
fn content_length_is_ours_and_framing_headers_never_go_out() {
    let wire = encode(
        Method::POST,
        &[
            ("content-length", b"999"),
            ("transfer-encoding", b"chunked"),
            ("connection", b"close"),
        ],
        b"abc",
    );
    assert_eq!(
        wire,
        b"POST /hook?x=1 HTTP/1.1\r\nhost: app:3000\r\ncontent-length: 3\r\n\r\nabc"
    );
    // An empty GET needs no length, unless the sender sent one.
    let wire = encode(Method::GET, &[], b"");
    assert_eq!(wire, b"GET /hook?x=1 HTTP/1.1\r\nhost: app:3000\r\n\r\n");
    let wire = encode(Method::GET, &[("content-length", b"0")], b"");
    assert_eq!(
        wire,
        b"GET /hook?x=1 HTTP/1.1\r\nhost: app:3000\r\ncontent-length: 0\r\n\r\n"
    );
    for method in [Method::HEAD, Method::DELETE, Method::OPTIONS, Method::TRACE] {
        let wire = encode(method.clone(), &[], b"");
        assert!(
            !wire.windows(14).any(|w| w == b"content-length"),
            "{method}"
        );
    }
    for method in [Method::PUT, Method::PATCH] {
        let wire = encode(method.clone(), &[], b"");
        assert!(wire.ends_with(b"content-length: 0\r\n\r\n"), "{method}");
    }
}

#[test]
fn header_values_are_written_as_raw_bytes() {
    let wire = encode(
        Method::POST,
        &[("x-latin", b"caf\xe9 \xff"), ("x-tab", b"a\tb")],
        b"",
    );
    let text = b"x-latin: caf\xe9 \xff\r\nx-tab: a\tb\r\n";
    assert!(wire.windows(text.len()).any(|w| w == text), "{wire:?}");
}

#[test]
fn small_bodies_ride_with_the_head_large_ones_follow_it() {
    let small = vec![7u8; COPY_BODY_LIMIT];
    let head = RequestHead::new(&Method::POST, "/", small.len());
    let encoded = head.finish("app", &small);
    assert!(encoded.rest.is_empty());
    assert!(encoded.head.ends_with(&small));

    let large = vec![7u8; COPY_BODY_LIMIT + 1];
    let head = RequestHead::new(&Method::POST, "/", large.len());
    let encoded = head.finish("app", &large);
    assert_eq!(encoded.rest.len(), large.len());
    assert!(encoded.head.ends_with(b"content-length: 65537\r\n\r\n"));
}

#[test]
fn lengths_in_decimal() {
    for n in [0usize, 1, 9, 10, 65_536, usize::MAX] {
        let mut digits = [0u8; 20];
        assert_eq!(format_len(n, &mut digits), n.to_string().as_bytes());
    }
}

#[tokio::test]
async fn a_large_request_arrives_whole_through_a_small_pipe() {
    let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let head = RequestHead::new(&Method::POST, "/big", body.len());
    let encoded = head.finish("app", &body);
    let expected = [encoded.head.as_slice(), encoded.rest].concat();
    let (mut ours, mut theirs) = tokio::io::duplex(4096);
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        theirs.read_to_end(&mut got).await.expect("read");
        got
    });
    write_request(&mut ours, &encoded).await.expect("written");
    drop(ours);
    assert_eq!(reader.await.expect("reader"), expected);
}

#[tokio::test]
async fn a_failed_first_write_is_not_accepted() {
    let (mut ours, theirs) = tokio::io::duplex(64);
    drop(theirs);
    let encoded = RequestHead::new(&Method::POST, "/", 0).finish("app", b"");
    let e = write_request(&mut ours, &encoded)
        .await
        .expect_err("the other end is gone");
    assert!(!e.accepted);

    let (mut ours, mut theirs) = tokio::io::duplex(16);
    let body = vec![1u8; 100];
    let encoded = RequestHead::new(&Method::POST, "/", body.len()).finish("app", &body);
    let writer = async { write_request(&mut ours, &encoded).await };
    let reader = async {
        let mut first = [0u8; 16];
        theirs.read_exact(&mut first).await.expect("read");
        drop(theirs);
    };
    let (result, ()) = tokio::join!(writer, reader);
    assert!(result.expect_err("closed mid-request").accepted);
}

/// An app that answers before reading the body, then reads nothing more:
/// the write stops at its answer instead of waiting for room that never
/// comes, and the answer is read from where the write left it.
#[tokio::test]
async fn an_answer_before_the_body_is_read_stops_the_write() {
    let body = vec![b'b'; 200_000];
    let encoded = RequestHead::new(&Method::POST, "/", body.len()).finish("app", &body);
    let (mut ours, mut theirs) = tokio::io::duplex(4096);
    let app = async {
        let mut head = [0u8; 1024];
        theirs.read_exact(&mut head).await.expect("read");
        theirs
            .write_all(b"HTTP/1.1 413 Too Large\r\ncontent-length: 3\r\n\r\nbig")
            .await
            .expect("write");
    };
    let (sent, ()) = tokio::join!(write_request(&mut ours, &encoded), app);
    let sent = sent.expect("stopped by the answer, not failed");
    assert!(sent.early);
    let answer = read_response(&mut ours, sent.read, false, LIMIT)
        .await
        .expect("the early answer");
    assert_eq!(answer.response.status(), 413);
    assert_eq!(body_of(&answer).await, "big");
    drop(theirs);
}

/// An interim `100 Continue` while the body is being written is read past:
/// the write goes on, and the final answer after it is the one read.
#[tokio::test]
async fn an_interim_answer_does_not_stop_the_write() {
    let body = vec![b'b'; 200_000];
    let encoded = RequestHead::new(&Method::POST, "/", body.len()).finish("app", &body);
    let total = encoded.head.len() + encoded.rest.len();
    let (mut ours, mut theirs) = tokio::io::duplex(4096);
    let app = async {
        theirs
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .expect("write");
        let mut request = vec![0u8; total];
        theirs.read_exact(&mut request).await.expect("read");
        theirs
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .await
            .expect("write");
        theirs
    };
    let (sent, theirs) = tokio::join!(write_request(&mut ours, &encoded), app);
    let sent = sent.expect("written whole");
    assert!(!sent.early);
    let answer = read_response(&mut ours, sent.read, false, LIMIT)
        .await
        .expect("the final answer");
    assert_eq!(answer.response.status(), 200);
    assert!(answer.reusable);
    assert_eq!(body_of(&answer).await, "ok");
    drop(theirs);
}

#[test]
fn only_a_final_head_or_garbage_counts_as_an_answer() {
    assert!(!answer_arrived(b""));
    assert!(!answer_arrived(b"HTTP/1.1 413 Too"));
    assert!(!answer_arrived(b"HTTP/1.1 100 Continue\r\n\r\n"));
    assert!(!answer_arrived(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 4"));
    assert!(answer_arrived(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 401 No\r\n\r\n"
    ));
    assert!(answer_arrived(b"HTTP/1.1 101 Switching\r\n\r\n"));
    assert!(answer_arrived(b"220 smtp.example ESMTP\r\n"));
    assert!(answer_arrived(&vec![b'H'; MAX_HEAD_BYTES]));
}

// -- The response -----------------------------------------------------

/// Hands out the given pieces one read at a time, then end of stream.
struct Pieces(VecDeque<Vec<u8>>);

impl Pieces {
    fn new(pieces: Vec<Vec<u8>>) -> Pieces {
        Pieces(pieces.into())
    }

    /// `wire` cut into pieces of `size` bytes.
    fn split(wire: &[u8], size: usize) -> Pieces {
        Pieces::new(wire.chunks(size).map(<[u8]>::to_vec).collect())
    }
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(mut piece) = self.0.pop_front() {
            let n = piece.len().min(buf.remaining());
            buf.put_slice(&piece[..n]);
            if n < piece.len() {
                self.0.push_front(piece.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

const LIMIT: usize = 1024;

/// Reads `wire` whole, then cut at every size from 1 to 7 bytes, and
/// checks every way gives the same answer.
async fn read(wire: &[u8], head_request: bool) -> Result<Answer, Error> {
    let whole = read_response(
        &mut Pieces::new(vec![wire.to_vec()]),
        BytesMut::new(),
        head_request,
        LIMIT,
    )
    .await;
    for size in 1..8 {
        let split = read_response(
            &mut Pieces::split(wire, size),
            BytesMut::new(),
            head_request,
            LIMIT,
        )
        .await;
        match (&whole, &split) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.response.status(), b.response.status());
                assert_eq!(a.response.headers(), b.response.headers());
                assert_eq!(body_of(a).await, body_of(b).await, "split at {size}");
                assert_eq!(a.reusable, b.reusable, "split at {size}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "split at {size}"),
            _ => panic!("whole {whole:?} but split at {size}: {split:?}"),
        }
    }
    whole
}

async fn body_of(answer: &Answer) -> Bytes {
    use http_body_util::BodyExt;
    answer
        .response
        .body()
        .clone()
        .collect()
        .await
        .expect("full body")
        .to_bytes()
}

#[tokio::test]
async fn content_length_body() {
    let answer = read(
        b"HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-App: a\r\nX-App: b\r\n\r\nhello",
        false,
    )
    .await
    .expect("answer");
    assert_eq!(answer.response.status(), 201);
    assert_eq!(body_of(&answer).await, "hello");
    let apps: Vec<_> = answer.response.headers().get_all("x-app").iter().collect();
    assert_eq!(apps, ["a", "b"]);
    assert!(answer.reusable);
    assert_eq!(answer.response.version(), http::Version::HTTP_11);
}

#[tokio::test]
async fn header_values_keep_their_bytes() {
    let answer = read(
        b"HTTP/1.1 200 OK\r\nx-latin: caf\xe9\r\ncontent-length: 0\r\n\r\n",
        false,
    )
    .await
    .expect("answer");
    assert_eq!(
        answer
            .response
            .headers()
            .get("x-latin")
            .map(HeaderValue::as_bytes),
        Some(&b"caf\xe9"[..])
    );
}

#[tokio::test]
async fn chunked_body_with_extensions_and_trailers() {
    let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\
                 5;name=value\r\nhello\r\n\
                 1 ; x=\"q\"\r\n \r\n\
                 A\r\n0123456789\r\n\
                 0\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n";
    let answer = read(wire, false).await.expect("answer");
    assert_eq!(body_of(&answer).await, "hello 0123456789");
    assert!(answer.reusable);
    let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    let answer = read(wire, false).await.expect("answer");
    assert_eq!(body_of(&answer).await, "");
    assert!(answer.reusable);
}

#[tokio::test]
async fn malformed_chunks_are_refused() {
    for (what, chunks) in [
        ("not hex", &b"zz\r\nhello\r\n0\r\n\r\n"[..]),
        ("no size", b"\r\nhello\r\n0\r\n\r\n"),
        ("too big a number", b"11111111111111111\r\n"),
        ("data longer than the size", b"3\r\nhello\r\n0\r\n\r\n"),
        ("cut short", b"5\r\nhel"),
        ("no last chunk", b"5\r\nhello\r\n"),
    ] {
        let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        wire.extend_from_slice(chunks);
        assert!(read(&wire, false).await.is_err(), "{what}");
    }
    let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;".to_vec();
    wire.extend(std::iter::repeat_n(b'x', MAX_CHUNK_LINE + 10));
    wire.extend_from_slice(b"\r\na\r\n0\r\n\r\n");
    let e = read(&wire, false).await.expect_err("a long size line");
    assert!(e.to_string().contains("chunk size line too long"), "{e}");
}

#[tokio::test]
async fn a_body_to_the_close_is_read_and_the_connection_not_reused() {
    let answer = read(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nuntil the end", false)
        .await
        .expect("answer");
    assert_eq!(body_of(&answer).await, "until the end");
    assert!(!answer.reusable);
    // A coding other than a final chunked runs to the close too.
    let answer = read(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n5\r\nhello",
        false,
    )
    .await
    .expect("answer");
    assert_eq!(body_of(&answer).await, "5\r\nhello");
    assert!(!answer.reusable);
}

#[tokio::test]
async fn head_204_and_304_have_no_body() {
    let answer = read(b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n", true)
        .await
        .expect("answer");
    assert_eq!(body_of(&answer).await, "");
    assert_eq!(
        answer
            .response
            .headers()
            .get("content-length")
            .map(HeaderValue::as_bytes),
        Some(&b"42"[..])
    );
    // An app that sends a body after a no-body answer anyway would have it
    // read as the next request's answer: such connections are not kept.
    assert!(!answer.reusable);
    for status in ["204 No Content", "304 Not Modified"] {
        let wire = format!("HTTP/1.1 {status}\r\nContent-Length: 3\r\n\r\n");
        let answer = read(wire.as_bytes(), false).await.expect("answer");
        assert_eq!(body_of(&answer).await, "");
        assert!(!answer.reusable);
    }
}

#[tokio::test]
async fn interim_answers_are_skipped_and_101_refused() {
    let wire = b"HTTP/1.1 100 Continue\r\n\r\n\
                 HTTP/1.1 102 Processing\r\n\r\n\
                 HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n\
                 HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok";
    let answer = read(wire, false).await.expect("answer");
    assert_eq!(answer.response.status(), 202);
    assert!(!answer.response.headers().contains_key("link"));
    assert_eq!(body_of(&answer).await, "ok");
    assert!(answer.reusable);

    let wire = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
    assert!(matches!(read(wire, false).await, Err(Error::Upgrade)));
}

#[tokio::test]
async fn content_length_must_be_one_number() {
    let answer = read(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok",
        false,
    )
    .await
    .expect("agreeing repeats are one length");
    assert_eq!(body_of(&answer).await, "ok");
    let lengths: Vec<_> = answer
        .response
        .headers()
        .get_all("content-length")
        .iter()
        .collect();
    assert_eq!(lengths, ["2"]);

    for bad in [
        "Content-Length: 2\r\nContent-Length: 3",
        "Content-Length: 2, 3",
        "Content-Length: -2",
        "Content-Length: +2",
        "Content-Length: 0x2",
        "Content-Length: ",
        "Content-Length: 99999999999999999999999",
    ] {
        let wire = format!("HTTP/1.1 200 OK\r\n{bad}\r\n\r\nok");
        assert!(
            matches!(read(wire.as_bytes(), false).await, Err(Error::Malformed(_))),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn oversize_answers_keep_their_status_and_lose_their_body() {
    async fn cut(wire: &[u8]) {
        let answer = read(wire, false).await.expect("an answer");
        assert!(answer.truncated);
        assert!(!answer.reusable);
        assert_eq!(answer.response.status(), 201);
        assert!(!answer.response.headers().contains_key("content-length"));
        assert_eq!(body_of(&answer).await, "");
    }
    let wire = format!(
        "HTTP/1.1 201 Created\r\nContent-Length: {}\r\n\r\n",
        LIMIT + 1
    );
    cut(wire.as_bytes()).await;
    let mut wire = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        wire.extend_from_slice(format!("{:x}\r\n", LIMIT / 2).as_bytes());
        wire.extend(std::iter::repeat_n(b'a', LIMIT / 2));
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    cut(&wire).await;
    let mut wire = b"HTTP/1.1 201 Created\r\n\r\n".to_vec();
    wire.extend(std::iter::repeat_n(b'a', LIMIT + 1));
    cut(&wire).await;
    // Exactly the limit is fine.
    let mut wire = format!("HTTP/1.1 200 OK\r\nContent-Length: {LIMIT}\r\n\r\n").into_bytes();
    wire.extend(std::iter::repeat_n(b'a', LIMIT));
    assert_eq!(
        body_of(&read(&wire, false).await.expect("answer"))
            .await
            .len(),
        LIMIT
    );
}

#[tokio::test]
async fn oversize_and_broken_heads_are_refused() {
    let mut wire = b"HTTP/1.1 200 OK\r\n".to_vec();
    while wire.len() <= MAX_HEAD_BYTES {
        wire.extend_from_slice(b"X-Filler: ");
        wire.extend(std::iter::repeat_n(b'a', 1000));
        wire.extend_from_slice(b"\r\n");
    }
    let e = read_response(&mut Pieces::new(vec![wire]), BytesMut::new(), false, LIMIT)
        .await
        .expect_err("too large");
    assert!(e.to_string().contains("response head too large"), "{e}");

    let mut wire = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..=MAX_HEADERS {
        wire.extend_from_slice(format!("x-{i}: v\r\n").as_bytes());
    }
    wire.extend_from_slice(b"content-length: 0\r\n\r\n");
    let e = read(&wire, false).await.expect_err("too many fields");
    assert!(e.to_string().contains("more than 128"), "{e}");

    // Past the first parse's room, up to the limit, every field arrives.
    for fields in [
        FEW_HEADERS - 1,
        FEW_HEADERS,
        FEW_HEADERS + 1,
        MAX_HEADERS - 1,
    ] {
        let mut wire = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..fields {
            wire.extend_from_slice(format!("x-{i}: v{i}\r\n").as_bytes());
        }
        wire.extend_from_slice(b"content-length: 2\r\n\r\nok");
        let answer = read(&wire, false).await.expect("a head within the limit");
        let headers = answer.response.headers();
        assert_eq!(headers.len(), fields + 1, "{fields} fields");
        assert_eq!(
            headers[format!("x-{}", fields - 1).as_str()],
            format!("v{}", fields - 1).as_str()
        );
    }

    for broken in [&b"HTTP/1.1 2000 OK\r\n\r\n"[..], b"SMTP ready\r\n\r\n"] {
        assert!(read(broken, false).await.is_err(), "{broken:?}");
    }
    assert!(matches!(read(b"", false).await, Err(Error::NoResponse)));
    assert!(matches!(
        read(b"HTTP/1.1 200 OK\r\nContent-Le", false).await,
        Err(Error::Truncated)
    ));
    assert!(matches!(
        read(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", false).await,
        Err(Error::Truncated)
    ));
}

#[tokio::test]
async fn reuse_decisions() {
    let cases: [(&[u8], bool); 8] = [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", false),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: x-a, Close\r\n\r\nok", false),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok", true),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok", false),
        // Bytes nobody asked for after the answer.
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n", false),
        // Both framings at once.
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            false,
        ),
    ];
    for (wire, reusable) in cases {
        // Read as one piece: the extra bytes arrive with the answer.
        let answer = read_response(
            &mut Pieces::new(vec![wire.to_vec()]),
            BytesMut::new(),
            false,
            LIMIT,
        )
        .await
        .expect("answer");
        assert_eq!(
            body_of(&answer).await,
            "ok",
            "{}",
            String::from_utf8_lossy(wire)
        );
        assert_eq!(
            answer.reusable,
            reusable,
            "{}",
            String::from_utf8_lossy(wire)
        );
    }
}

#[tokio::test]
async fn a_response_through_a_duplex_pipe() {
    let (mut ours, mut theirs) = tokio::io::duplex(8);
    let app = tokio::spawn(async move {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        for piece in wire.chunks(3) {
            theirs.write_all(piece).await.expect("write");
            tokio::task::yield_now().await;
        }
        theirs
    });
    let answer = read_response(&mut ours, BytesMut::new(), false, LIMIT)
        .await
        .expect("answer");
    assert_eq!(body_of(&answer).await, "abc");
    assert!(answer.reusable);
    drop(app.await.expect("app"));
}
