//! HTTP/1.1 on the wire to the app: the request head (and small bodies) in
//! one buffer written at once, the response head parsed with `httparse`, and
//! the response body framed per RFC 9112 §6.3 (none, `Content-Length`,
//! chunked, or until the app closes).
//!
//! It also decides whether the connection may carry another request: only
//! when the response was HTTP/1.1, did not say `Connection: close`, was
//! framed by its length or its chunks, and nothing followed it. (hookgate's
//! own requests never carry `Connection`, so never ask to close.)

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::Poll;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

use crate::outcome::Body;

/// Bodies up to this size are copied behind the head so the whole request
/// goes out in one write; larger ones are written from where they are.
pub(super) const COPY_BODY_LIMIT: usize = 64 * 1024;
/// Largest response head (status line and headers) accepted.
pub(super) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most response header fields accepted.
const MAX_HEADERS: usize = 128;
/// Header fields a response head is first parsed for; apps send fewer.
const FEW_HEADERS: usize = 32;
/// Longest chunk-size line (extensions included) accepted.
const MAX_CHUNK_LINE: usize = 4 * 1024;
/// Bytes asked of the socket per read when nothing better is known.
const READ_SIZE: usize = 8 * 1024;

#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the connection closed before a response arrived")]
    NoResponse,
    #[error("the connection closed in the middle of the response")]
    Truncated,
    #[error("malformed response head: {0}")]
    Head(httparse::Error),
    #[error("response head too large (over {MAX_HEAD_BYTES} bytes)")]
    HeadTooLarge,
    #[error("malformed response: {0}")]
    Malformed(&'static str),
    #[error("101 Switching Protocols to a request that asked for no upgrade")]
    Upgrade,
    #[error("response body over {0} bytes")]
    BodyTooLarge(usize),
}

/// A write that failed, and whether any byte of the request got out first.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub(super) struct WriteError {
    /// False only when the very first write failed: the app has seen nothing.
    pub accepted: bool,
    pub source: io::Error,
    /// What of an answer was read while writing: an app that answers and
    /// closes before reading the whole request makes the write fail, and its
    /// answer is still to be read from here and the socket.
    pub read: BytesMut,
}

/// A request written, whole or cut short by the app's early answer.
#[derive(Debug)]
pub(super) struct Sent {
    /// What of the answer was read while writing: where reading it goes on.
    pub read: BytesMut,
    /// The app answered before the whole request was written, and writing
    /// stopped there (RFC 9112 §9.5). The connection is out of step with the
    /// request and must not carry another one.
    pub early: bool,
}

// ---------------------------------------------------------------------------
// The request

/// Methods whose empty body needs no `Content-Length: 0` (RFC 9110 §8.6).
fn body_optional(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}

/// A request head being written: request line, then header fields.
pub(super) struct RequestHead {
    buf: Vec<u8>,
    has_host: bool,
    sender_length: bool,
    body_optional: bool,
}

/// A request ready to be written: `head` (with the body when small) and the
/// body bytes still to follow it.
pub(super) struct Encoded<'b> {
    pub head: Vec<u8>,
    pub rest: &'b [u8],
}

impl RequestHead {
    /// Starts `METHOD target HTTP/1.1`; `body_len` sizes the buffer.
    pub fn new(method: &Method, target: &str, body_len: usize) -> RequestHead {
        let body_room = if body_len <= COPY_BODY_LIMIT {
            body_len
        } else {
            0
        };
        let mut buf = Vec::with_capacity(1024 + body_room);
        buf.extend_from_slice(method.as_str().as_bytes());
        buf.push(b' ');
        buf.extend_from_slice(target.as_bytes());
        buf.extend_from_slice(b" HTTP/1.1\r\n");
        RequestHead {
            buf,
            has_host: false,
            sender_length: false,
            body_optional: body_optional(method),
        }
    }

    /// A header field of the sender's request. The message framing is this
    /// hop's own business: the sender's `Content-Length` is replaced by ours,
    /// and `Transfer-Encoding` and `Connection` are never sent.
    pub fn forward(&mut self, name: &HeaderName, value: &HeaderValue) {
        if name == header::CONTENT_LENGTH {
            self.sender_length = true;
            return;
        }
        if name == header::TRANSFER_ENCODING || name == header::CONNECTION {
            return;
        }
        if name == header::HOST {
            self.has_host = true;
        }
        self.field(name.as_str().as_bytes(), value.as_bytes());
    }

    /// A header field hookgate adds (a valid value: no CR, LF or NUL).
    pub fn add(&mut self, name: &HeaderName, value: &[u8]) {
        self.field(name.as_str().as_bytes(), value);
    }

    fn field(&mut self, name: &[u8], value: &[u8]) {
        // Values go out as the bytes they are, obs-text included.
        self.buf.extend_from_slice(name);
        self.buf.extend_from_slice(b": ");
        self.buf.extend_from_slice(value);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// Ends the head: `host` when the sender sent no `Host`, our own
    /// `Content-Length`, the blank line, and the body if it is small.
    pub fn finish<'b>(mut self, host: &str, body: &'b [u8]) -> Encoded<'b> {
        if !self.has_host {
            self.field(b"host", host.as_bytes());
        }
        if !body.is_empty() || !self.body_optional || self.sender_length {
            let mut digits = [0u8; 20];
            let len = format_len(body.len(), &mut digits);
            self.field(b"content-length", len);
        }
        self.buf.extend_from_slice(b"\r\n");
        if body.len() <= COPY_BODY_LIMIT {
            self.buf.extend_from_slice(body);
            Encoded {
                head: self.buf,
                rest: &[],
            }
        } else {
            Encoded {
                head: self.buf,
                rest: body,
            }
        }
    }
}

/// `n` in decimal, written at the end of `buf`.
fn format_len(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Writes the request, watching the read side whenever a write cannot go
/// on at once: an app may answer before it has read the whole body (an early
/// `413` or `401`) and then stop reading or close. Once a final answer's head
/// (any status but 1xx, or 101) has arrived, or bytes that cannot become
/// one, writing stops there and [`Sent::early`] says so; interim `1xx`
/// answers are read past. A request written in one go never looks at the
/// read side here: its answer is read after.
///
/// Fails with `accepted: false` only when the first write call failed,
/// before the app could have seen a byte.
pub(super) async fn write_request<S>(io: &mut S, request: &Encoded<'_>) -> Result<Sent, WriteError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let head = request.head.as_slice();
    let rest = request.rest;
    let total = head.len() + rest.len();
    let mut written = 0;
    let mut read = BytesMut::new();
    // Cleared at end of stream or on a read error; the write side then
    // reports the failure, if there is one.
    let mut readable = true;
    let fail = |written: usize, source: io::Error, read: &mut BytesMut| WriteError {
        accepted: written > 0,
        source,
        read: std::mem::take(read),
    };
    std::future::poll_fn(|cx| {
        loop {
            let wrote = if written < total {
                let io = Pin::new(&mut *io);
                let result = if written < head.len() {
                    if rest.is_empty() {
                        io.poll_write(cx, &head[written..])
                    } else {
                        let parts = [IoSlice::new(&head[written..]), IoSlice::new(rest)];
                        io.poll_write_vectored(cx, &parts)
                    }
                } else {
                    io.poll_write(cx, &rest[written - head.len()..])
                };
                match result {
                    Poll::Ready(Ok(0)) => {
                        let e = io::ErrorKind::WriteZero.into();
                        return Poll::Ready(Err(fail(written, e, &mut read)));
                    }
                    Poll::Ready(Ok(n)) => {
                        written += n;
                        true
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(fail(written, e, &mut read))),
                    Poll::Pending => false,
                }
            } else {
                match Pin::new(&mut *io).poll_flush(cx) {
                    Poll::Ready(Ok(())) => {
                        return Poll::Ready(Ok(Sent {
                            read: std::mem::take(&mut read),
                            early: false,
                        }));
                    }
                    Poll::Ready(Err(e)) => {
                        return Poll::Ready(Err(fail(written.max(1), e, &mut read)));
                    }
                    Poll::Pending => false,
                }
            };
            if wrote && written == total && read.is_empty() {
                // Written in one go (or the last piece went at once): the
                // flush follows, and the answer is read after it.
                continue;
            }
            let mut arrived = false;
            if readable {
                let mut chunk = [0u8; READ_SIZE];
                let mut into = ReadBuf::new(&mut chunk);
                match Pin::new(&mut *io).poll_read(cx, &mut into) {
                    Poll::Ready(Ok(())) if into.filled().is_empty() => readable = false,
                    Poll::Ready(Err(_)) => readable = false,
                    Poll::Ready(Ok(())) => {
                        read.extend_from_slice(into.filled());
                        if answer_arrived(&read) {
                            return Poll::Ready(Ok(Sent {
                                read: std::mem::take(&mut read),
                                early: true,
                            }));
                        }
                        arrived = true;
                    }
                    Poll::Pending => {}
                }
            }
            if !wrote && !arrived {
                return Poll::Pending;
            }
        }
    })
    .await
}

/// Whether `buf` (bytes the app sent while its request was being written)
/// holds a final answer's complete head, past any interim `1xx` heads, or
/// bytes that can never become one (malformed, or too long).
fn answer_arrived(buf: &[u8]) -> bool {
    if buf.len() >= MAX_HEAD_BYTES {
        return true;
    }
    let mut at = 0;
    loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut slots);
        match parsed.parse(&buf[at..]) {
            Ok(httparse::Status::Complete(len)) => match parsed.code {
                Some(code) if (100..200).contains(&code) && code != 101 => at += len,
                _ => return true,
            },
            Ok(httparse::Status::Partial) => return false,
            Err(_) => return true,
        }
    }
}

// ---------------------------------------------------------------------------
// The response

/// The app's response, and whether its connection may be reused.
#[derive(Debug)]
pub(super) struct Answer {
    pub response: Response<Body>,
    pub reusable: bool,
    /// The body was over the limit: the response carries none.
    pub truncated: bool,
}

struct Head {
    status: StatusCode,
    http11: bool,
    headers: HeaderMap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No body at all (HEAD, 204, 304).
    Empty,
    Length(usize),
    Chunked,
    /// Everything until the app closes the connection.
    UntilClose,
}

/// Reads one response off `io`, starting with the bytes already in `buf`
/// (what [`write_request`] read while writing): interim 1xx answers are
/// skipped, the body is read whole (at most `limit` bytes). `head_request`
/// says the request was a HEAD, whose answer has no body whatever its
/// headers say.
pub(super) async fn read_response<S>(
    io: &mut S,
    mut buf: BytesMut,
    head_request: bool,
    limit: usize,
) -> Result<Answer, Error>
where
    S: AsyncRead + Unpin,
{
    let head = loop {
        if let Some(head) = take_head(&mut buf)? {
            match head.status.as_u16() {
                101 => return Err(Error::Upgrade),
                100..=199 => continue,
                _ => break head,
            }
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(Error::HeadTooLarge);
        }
        if fill(io, &mut buf, READ_SIZE).await? == 0 {
            return Err(if buf.is_empty() {
                Error::NoResponse
            } else {
                Error::Truncated
            });
        }
    };
    let Head {
        status,
        http11,
        mut headers,
    } = head;

    let (framing, ambiguous) = framing(head_request, status, &headers)?;
    let body = match framing {
        Framing::Empty => Ok(Bytes::new()),
        Framing::Length(len) if len > limit => Err(Error::BodyTooLarge(limit)),
        Framing::Length(len) => {
            normalize_length(&mut headers, len);
            read_length(io, &mut buf, len).await
        }
        Framing::Chunked => read_chunked(io, &mut buf, limit).await,
        Framing::UntilClose => read_to_close(io, &mut buf, limit).await,
    };
    // The sender's connection is framed by hookgate alone: a length the app
    // gave beside chunked or close-delimited framing (RFC 9112 §6.3 ¶3) or for
    // a body not relayed is not passed on.
    if framing != Framing::Empty && !matches!(framing, Framing::Length(_)) {
        headers.remove(header::CONTENT_LENGTH);
    }
    let (body, truncated) = match body {
        Ok(body) => (body, false),
        Err(Error::BodyTooLarge(_)) => {
            headers.remove(header::CONTENT_LENGTH);
            (Bytes::new(), true)
        }
        Err(e) => return Err(e),
    };
    // A connection is kept only when the answer ended exactly where its
    // framing says and nothing followed it. No-body answers (HEAD, 204, 304)
    // are not trusted with another request: an app that sends a body after
    // one anyway would have it read as the next request's answer.
    let reusable = http11
        && !ambiguous
        && !truncated
        && matches!(framing, Framing::Length(_) | Framing::Chunked)
        && !says_close(&headers)
        && buf.is_empty();

    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(Answer {
        response,
        reusable,
        truncated,
    })
}

/// Reads more into `buf` (room for at least `want` bytes); 0 at end of stream.
async fn fill<S>(io: &mut S, buf: &mut BytesMut, want: usize) -> Result<usize, Error>
where
    S: AsyncRead + Unpin,
{
    buf.reserve(want.max(1));
    Ok(io.read_buf(buf).await?)
}

/// Parses a complete response head at the start of `buf` and removes it from
/// `buf`; `None` when more bytes are needed. Header values share the bytes
/// read, without a copy.
fn take_head(buf: &mut BytesMut) -> Result<Option<Head>, Error> {
    if buf.is_empty() {
        return Ok(None);
    }
    // Room for a few fields first: the slots are zeroed on every parse, and
    // 128 of them (plus their spans) were 8 KiB of memset per response.
    match parse_head::<FEW_HEADERS>(buf) {
        Err(Error::Head(httparse::Error::TooManyHeaders)) => parse_head::<MAX_HEADERS>(buf),
        other => other,
    }
}

/// [`take_head`] with room for `N` header fields; more is
/// `TooManyHeaders`, and past [`MAX_HEADERS`] malformed.
fn parse_head<const N: usize>(buf: &mut BytesMut) -> Result<Option<Head>, Error> {
    let mut slots = [httparse::EMPTY_HEADER; N];
    let mut parsed = httparse::Response::new(&mut slots);
    let len = match parsed.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) if N >= MAX_HEADERS => {
            return Err(Error::Malformed("more than 128 header fields"));
        }
        Err(e) => return Err(Error::Head(e)),
    };
    let status = parsed
        .code
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or(Error::Malformed("invalid status code"))?;
    let http11 = parsed.version == Some(1);
    // Where each name and value sits in `buf`, so they can be cut out of the
    // frozen head below.
    let start = buf.as_ptr() as usize;
    let mut spans = [(0usize, 0usize, 0usize, 0usize); N];
    let count = parsed.headers.len();
    for (span, field) in spans.iter_mut().zip(parsed.headers.iter()) {
        *span = (
            field.name.as_ptr() as usize - start,
            field.name.len(),
            field.value.as_ptr() as usize - start,
            field.value.len(),
        );
    }
    let head = buf.split_to(len).freeze();
    let mut headers = HeaderMap::with_capacity(count);
    for &(name_at, name_len, value_at, value_len) in &spans[..count] {
        let name = HeaderName::from_bytes(&head[name_at..name_at + name_len])
            .map_err(|_| Error::Malformed("invalid header name"))?;
        let value = HeaderValue::from_maybe_shared(head.slice(value_at..value_at + value_len))
            .map_err(|_| Error::Malformed("invalid header value"))?;
        headers.append(name, value);
    }
    Ok(Some(Head {
        status,
        http11,
        headers,
    }))
}

/// How the body is delimited (RFC 9112 §6.3), and whether the head was
/// ambiguous enough (`Transfer-Encoding` and `Content-Length` together) that
/// the connection must not be trusted with another request.
fn framing(
    head_request: bool,
    status: StatusCode,
    headers: &HeaderMap,
) -> Result<(Framing, bool), Error> {
    if head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok((Framing::Empty, false));
    }
    let has_length = headers.contains_key(header::CONTENT_LENGTH);
    if headers.contains_key(header::TRANSFER_ENCODING) {
        // Only a final `chunked` delimits the body; any other coding runs
        // until the app closes.
        let last = headers
            .get_all(header::TRANSFER_ENCODING)
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
            .map(<[u8]>::trim_ascii)
            .rfind(|coding| !coding.is_empty());
        let framing = match last {
            Some(coding) if coding.eq_ignore_ascii_case(b"chunked") => Framing::Chunked,
            _ => Framing::UntilClose,
        };
        return Ok((framing, has_length));
    }
    if has_length {
        return Ok((Framing::Length(content_length(headers)?), false));
    }
    Ok((Framing::UntilClose, false))
}

/// The one length every `Content-Length` value agrees on.
fn content_length(headers: &HeaderMap) -> Result<usize, Error> {
    let mut length = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        for item in value.as_bytes().split(|&b| b == b',') {
            let item = item.trim_ascii();
            if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
                return Err(Error::Malformed("invalid content-length"));
            }
            let n = std::str::from_utf8(item)
                .ok()
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or(Error::Malformed("content-length out of range"))?;
            match length {
                Some(seen) if seen != n => {
                    return Err(Error::Malformed("conflicting content-length values"));
                }
                _ => length = Some(n),
            }
        }
    }
    length.ok_or(Error::Malformed("invalid content-length"))
}

/// Leaves one plain `Content-Length` where the app repeated an agreeing one.
fn normalize_length(headers: &mut HeaderMap, len: usize) {
    let mut values = headers.get_all(header::CONTENT_LENGTH).iter();
    let plain = match (values.next(), values.next()) {
        (Some(only), None) => only.as_bytes().iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !plain {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
}

fn says_close(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"))
}

async fn read_length<S>(io: &mut S, buf: &mut BytesMut, len: usize) -> Result<Bytes, Error>
where
    S: AsyncRead + Unpin,
{
    while buf.len() < len {
        let missing = len - buf.len();
        if fill(io, buf, missing).await? == 0 {
            return Err(Error::Truncated);
        }
    }
    Ok(buf.split_to(len).freeze())
}

async fn read_to_close<S>(io: &mut S, buf: &mut BytesMut, limit: usize) -> Result<Bytes, Error>
where
    S: AsyncRead + Unpin,
{
    loop {
        if buf.len() > limit {
            return Err(Error::BodyTooLarge(limit));
        }
        if fill(io, buf, READ_SIZE).await? == 0 {
            return Ok(buf.split().freeze());
        }
    }
}

async fn read_chunked<S>(io: &mut S, buf: &mut BytesMut, limit: usize) -> Result<Bytes, Error>
where
    S: AsyncRead + Unpin,
{
    let mut body = BytesMut::new();
    loop {
        let size = chunk_size(io, buf).await?;
        if size == 0 {
            break;
        }
        if size > (limit - body.len()) as u64 {
            return Err(Error::BodyTooLarge(limit));
        }
        // At most `limit`, so it fits in usize.
        let mut missing = size as usize;
        body.reserve(missing);
        while missing > 0 {
            if buf.is_empty() && fill(io, buf, missing.min(1 << 20)).await? == 0 {
                return Err(Error::Truncated);
            }
            let n = missing.min(buf.len());
            body.extend_from_slice(&buf[..n]);
            buf.advance(n);
            missing -= n;
        }
        while buf.len() < 2 {
            if fill(io, buf, READ_SIZE).await? == 0 {
                return Err(Error::Truncated);
            }
        }
        if &buf[..2] != b"\r\n" {
            return Err(Error::Malformed("chunk data not followed by CRLF"));
        }
        buf.advance(2);
    }
    skip_trailers(io, buf).await?;
    Ok(body.freeze())
}

/// Reads a chunk-size line (extensions ignored) and returns the size.
async fn chunk_size<S>(io: &mut S, buf: &mut BytesMut) -> Result<u64, Error>
where
    S: AsyncRead + Unpin,
{
    loop {
        // httparse takes an empty size as 0; a size needs at least one digit.
        if buf.first().is_some_and(|b| !b.is_ascii_hexdigit()) {
            return Err(Error::Malformed("invalid chunk size"));
        }
        match httparse::parse_chunk_size(buf) {
            Ok(httparse::Status::Complete((used, _))) if used > MAX_CHUNK_LINE => {
                return Err(Error::Malformed("chunk size line too long"));
            }
            Ok(httparse::Status::Complete((used, size))) => {
                buf.advance(used);
                return Ok(size);
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_CHUNK_LINE {
                    return Err(Error::Malformed("chunk size line too long"));
                }
                if fill(io, buf, READ_SIZE).await? == 0 {
                    return Err(Error::Truncated);
                }
            }
            Err(_) => return Err(Error::Malformed("invalid chunk size")),
        }
    }
}

/// Reads the trailer section after the last chunk, up to its blank line,
/// and discards it.
async fn skip_trailers<S>(io: &mut S, buf: &mut BytesMut) -> Result<(), Error>
where
    S: AsyncRead + Unpin,
{
    let mut seen = 0;
    loop {
        match buf.iter().position(|&b| b == b'\n') {
            Some(end) => {
                let line = buf[..end].strip_suffix(b"\r").unwrap_or(&buf[..end]);
                let blank = line.is_empty();
                buf.advance(end + 1);
                seen += end + 1;
                if blank {
                    return Ok(());
                }
            }
            None => {
                if fill(io, buf, READ_SIZE).await? == 0 {
                    return Err(Error::Truncated);
                }
            }
        }
        if seen + buf.len() > MAX_HEAD_BYTES + READ_SIZE {
            return Err(Error::Malformed("trailer section too large"));
        }
    }
}

#[cfg(test)]
mod tests;
