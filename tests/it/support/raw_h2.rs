//! An HTTP/2 client on raw frames (RFC 9113 §4.1: a 9-byte header, then the
//! payload), so a test decides exactly which frames it answers and when it
//! stops answering: a client library acknowledges pings on its own.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::WAIT;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;

/// One frame as it came off the wire.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

/// The bytes of one frame.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("a test frame is small");
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

async fn read_frame(stream: &mut TcpStream) -> io::Result<Frame> {
    let mut header = [0u8; 9];
    stream.read_exact(&mut header).await?;
    let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await?;
    Ok(Frame {
        kind: header[3],
        flags: header[4],
        stream: u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff,
        payload,
    })
}

/// An h2 connection whose client plays by the rules (acknowledges the
/// server's SETTINGS and PINGs) until the server's `GOAWAY` arrives, and
/// from then on neither reads nor writes, with its socket left open.
pub struct DeafAfterGoaway {
    stream: TcpStream,
}

impl DeafAfterGoaway {
    /// Connects, sends the preface and an empty SETTINGS, and acknowledges
    /// the server's SETTINGS: the handshake is complete on both sides.
    pub async fn connect(addr: SocketAddr) -> DeafAfterGoaway {
        let handshake = async {
            let mut stream = TcpStream::connect(addr).await?;
            let mut hello = PREFACE.to_vec();
            hello.extend_from_slice(&frame(SETTINGS, 0, 0, &[]));
            stream.write_all(&hello).await?;
            loop {
                let frame = read_frame(&mut stream).await?;
                if frame.kind == SETTINGS && frame.flags & ACK == 0 {
                    stream
                        .write_all(&self::frame(SETTINGS, ACK, 0, &[]))
                        .await?;
                    return Ok::<_, io::Error>(stream);
                }
            }
        };
        let stream = tokio::time::timeout(WAIT, handshake)
            .await
            .expect("h2 handshake in time")
            .expect("h2 handshake");
        DeafAfterGoaway { stream }
    }

    /// Reads (acknowledging SETTINGS and PINGs) until a `GOAWAY` arrives;
    /// when it did. From then on the client is deaf.
    pub async fn until_goaway(&mut self) -> Instant {
        let stream = &mut self.stream;
        let read = async {
            loop {
                let frame = read_frame(stream).await?;
                match frame.kind {
                    GOAWAY => return Ok::<_, io::Error>(Instant::now()),
                    SETTINGS if frame.flags & ACK == 0 => {
                        stream
                            .write_all(&self::frame(SETTINGS, ACK, 0, &[]))
                            .await?;
                    }
                    PING if frame.flags & ACK == 0 => {
                        stream
                            .write_all(&self::frame(PING, ACK, 0, &frame.payload))
                            .await?;
                    }
                    _ => {}
                }
            }
        };
        tokio::time::timeout(WAIT, read)
            .await
            .expect("a GOAWAY in time")
            .expect("frames until the GOAWAY")
    }

    /// Whether the server closed the connection: what is left unread is
    /// drained until end of stream (or a reset), for at most `within`.
    pub async fn closed_by_server(mut self, within: Duration) -> bool {
        let drain = async {
            let mut sink = [0u8; 4096];
            loop {
                match self.stream.read(&mut sink).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        };
        tokio::time::timeout(within, drain).await.is_ok()
    }
}
