//! Open-loop load at a fixed rate: the latency a sender sees at a real load.
//!
//!     openloop --port P --pool FILE --record-len N --rate 2000 --seconds 10 --conns 32
//!
//! Sends the pre-built requests of a pool file (`bench/gen_pool.py`, fixed
//! length records, each sent once) to 127.0.0.1:P at `rate` requests a
//! second, whatever the answers. The rate is split over `conns` keep-alive
//! connections: request `i` is due at `start + i / rate` and goes out on
//! connection `i % conns`. One thread polls every connection without
//! blocking (it spins on its own CPU), so a request leaves within
//! microseconds of its due time. A request's latency runs from when it was
//! due, not from when it could be sent: a slow answer that delays the next
//! request on its connection is counted in full (no coordinated omission).
//! Answers must be `200` with a `Content-Length` body; anything else ends
//! the run with an error and a non-zero exit.
//!
//! Prints one line: `RESULT sent=… p50_us=… p90_us=… p99_us=… p999_us=…
//! max_us=… late_p99_us=…` (`late_p99_us`: the p99 of how late requests left
//! against their schedule, which says whether the generator kept up).
//! Run under `cargo bench --bench openloop -- …`; `--bench`, which cargo
//! adds, is ignored. Without arguments (`cargo test --benches` runs it so)
//! it checks itself against a local server thread.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

struct Args {
    port: u16,
    pool: String,
    record_len: usize,
    rate: u64,
    seconds: u64,
    conns: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut port = None;
    let mut pool = None;
    let mut record_len = None;
    let mut rate = 2000;
    let mut seconds = 10;
    let mut conns = 32;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--bench" {
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |_| format!("{flag}: not a number: {value}");
        match flag.as_str() {
            "--port" => port = Some(value.parse().map_err(bad)?),
            "--pool" => pool = Some(value.clone()),
            "--record-len" => record_len = Some(value.parse().map_err(bad)?),
            "--rate" => rate = value.parse().map_err(bad)?,
            "--seconds" => seconds = value.parse().map_err(bad)?,
            "--conns" => conns = value.parse().map_err(bad)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(Args {
        port: port.ok_or("--port is required")?,
        pool: pool.ok_or("--pool is required")?,
        record_len: record_len.ok_or("--record-len is required")?,
        rate: rate.max(1),
        seconds,
        conns: conns.max(1),
    })
}

/// Where one connection is in its request.
enum Phase {
    /// Waiting for the due time of request `index`.
    Idle,
    /// `written` bytes of request `index` are out.
    Writing { written: usize },
    /// The request is out; its answer is being read into `buf`.
    Reading,
    /// Its share of the schedule is sent and answered.
    Done,
}

struct Conn {
    stream: TcpStream,
    phase: Phase,
    index: usize,
    due: Instant,
    buf: Vec<u8>,
}

/// The answer at the front of `buf`, when it is whole: its status and its
/// length in bytes (head and `Content-Length` body).
fn whole_answer(buf: &[u8]) -> Result<Option<(u16, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(buf) {
        Ok(httparse::Status::Complete(head)) => {
            let length = response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| {
                    std::str::from_utf8(h.value)
                        .ok()?
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .ok_or("an answer without Content-Length")?;
            let status = response.code.unwrap_or(0);
            Ok((buf.len() >= head + length).then_some((status, head + length)))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(format!("bad answer: {e}")),
    }
}

/// Runs the schedule on one thread, polling every connection without
/// blocking, so a request leaves within microseconds of its due time.
fn run(args: &Args, pool: &[u8], total: usize) -> Result<(Vec<u64>, Vec<u64>), String> {
    let interval = Duration::from_nanos(1_000_000_000 / args.rate);
    let due_of = |start: Instant, index: usize| start + interval * index as u32;
    let mut conns = Vec::with_capacity(args.conns);
    for c in 0..args.conns.min(total) {
        let stream =
            TcpStream::connect(("127.0.0.1", args.port)).map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        conns.push(Conn {
            stream,
            phase: Phase::Idle,
            index: c,
            due: Instant::now(),
            buf: Vec::with_capacity(16 * 1024),
        });
    }
    let start = Instant::now() + Duration::from_millis(100);
    for conn in &mut conns {
        conn.due = due_of(start, conn.index);
    }
    let mut latencies = Vec::with_capacity(total);
    let mut late = Vec::with_capacity(total);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut open = conns.len();
    // Bounded: every request is answered within 30 s of its due time, or the run fails.
    while open > 0 {
        let now = Instant::now();
        for conn in &mut conns {
            loop {
                match conn.phase {
                    Phase::Idle => {
                        if now < conn.due {
                            break;
                        }
                        late.push(now.saturating_duration_since(conn.due).as_micros() as u64);
                        conn.phase = Phase::Writing { written: 0 };
                    }
                    Phase::Writing { written } => {
                        let record =
                            &pool[conn.index * args.record_len..(conn.index + 1) * args.record_len];
                        match conn.stream.write(&record[written..]) {
                            Ok(n) if written + n == record.len() => conn.phase = Phase::Reading,
                            Ok(n) => {
                                conn.phase = Phase::Writing {
                                    written: written + n,
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            Err(e) => return Err(format!("write: {e}")),
                        }
                    }
                    Phase::Reading => {
                        if let Some((status, len)) = whole_answer(&conn.buf)? {
                            if status != 200 {
                                return Err(format!("request {} answered {status}", conn.index));
                            }
                            conn.buf.drain(..len);
                            latencies.push(
                                Instant::now()
                                    .saturating_duration_since(conn.due)
                                    .as_micros() as u64,
                            );
                            conn.index += args.conns;
                            if conn.index >= total {
                                conn.phase = Phase::Done;
                                open -= 1;
                            } else {
                                conn.due = due_of(start, conn.index);
                                conn.phase = Phase::Idle;
                            }
                            continue;
                        }
                        if now.saturating_duration_since(conn.due) > Duration::from_secs(30) {
                            return Err(format!("request {} unanswered after 30 s", conn.index));
                        }
                        match conn.stream.read(&mut chunk) {
                            Ok(0) => return Err("the server closed a connection".into()),
                            Ok(n) => conn.buf.extend_from_slice(&chunk[..n]),
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            Err(e) => return Err(format!("read: {e}")),
                        }
                    }
                    Phase::Done => break,
                }
            }
        }
    }
    Ok((latencies, late))
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Without arguments (as `cargo test --benches` runs it): the schedule
/// against a local server thread that answers every request, 1,000 requests
/// at 5,000 a second; every one must be answered.
fn self_test() -> ! {
    const REQUEST: &[u8] = b"GET /self-test HTTP/1.1\r\nHost: openloop\r\n\r\n";
    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let listener = match std::net::TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => {
            eprintln!("openloop self-test: bind: {e}");
            std::process::exit(1);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let conns = 4;
    std::thread::spawn(move || {
        for stream in listener.incoming().take(conns).flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let mut pending = 0;
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    pending += n;
                    while pending >= REQUEST.len() {
                        pending -= REQUEST.len();
                        if stream.write_all(ANSWER).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let args = Args {
        port,
        pool: String::new(),
        record_len: REQUEST.len(),
        rate: 5000,
        seconds: 1,
        conns,
    };
    let total = 1000;
    let pool = REQUEST.repeat(total);
    match run(&args, &pool, total) {
        Ok((latencies, _)) if latencies.len() == total => {
            println!("openloop self-test: {total} requests answered on schedule");
            std::process::exit(0);
        }
        Ok((latencies, _)) => {
            eprintln!(
                "openloop self-test: {} of {total} answered",
                latencies.len()
            );
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("openloop self-test: {e}");
            std::process::exit(1);
        }
    }
}

fn main() {
    if std::env::args().skip(1).all(|a| a == "--bench") {
        self_test();
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("openloop: {e}");
            std::process::exit(2);
        }
    };
    let pool = match std::fs::read(&args.pool) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("openloop: {}: {e}", args.pool);
            std::process::exit(2);
        }
    };
    let records = pool.len() / args.record_len.max(1);
    let total = (args.rate * args.seconds) as usize;
    if records < total {
        eprintln!("openloop: the pool holds {records} requests, the run needs {total}");
        std::process::exit(2);
    }
    let (mut latencies, mut late) = match run(&args, &pool, total) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("openloop: {e}");
            std::process::exit(1);
        }
    };
    latencies.sort_unstable();
    late.sort_unstable();
    println!(
        "RESULT sent={} p50_us={} p90_us={} p99_us={} p999_us={} max_us={} late_p99_us={}",
        latencies.len(),
        percentile(&latencies, 50.0),
        percentile(&latencies, 90.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 99.9),
        latencies.last().copied().unwrap_or(0),
        percentile(&late, 99.0),
    );
}
