//! The `/metrics` endpoint: one route over HTTP/1.1, answered from the latest exposition. A
//! dependency-free server is enough for it: Prometheus sends one `GET` per scrape. It must
//! stay up for the scraper whatever other clients do, so each connection has a thread of its
//! own (at most [`MAX_CONNECTIONS`] at once), one deadline for its whole request
//! ([`REQUEST_DEADLINE`]; [`CROWDED_HEAD_DEADLINE`] for its head when more than half the slots
//! are taken), and bounded request lines and headers. At the cap, a new connection takes the
//! slot of the oldest one that has not sent its request line yet: only clients that are
//! sending requests can fill the server.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The content type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The most connections served at once; more, when every one has sent its request line, are
/// answered 503 and closed.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// How long a client has to send its whole request and read the answer.
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// The longest request line or header line, CRLF included (longer: 414 or 431).
const LINE_LIMIT: usize = 8 * 1024;
/// The most bytes of request line and headers together (more: 431).
const HEAD_LIMIT: usize = 64 * 1024;

/// How long a client has to send its request line and headers when more than half the
/// connections are taken: a crowd of idle clients holds its slots for less time.
pub(crate) const CROWDED_HEAD_DEADLINE: Duration = Duration::from_secs(1);

/// The latest exposition, shared between the sampling loop and the server.
pub(crate) type SharedPage = Arc<Mutex<String>>;

/// One connection being served.
struct Connection {
    /// A handle to shut it down by (evicted while idle).
    stream: TcpStream,
    /// Whether its request line has come: then it is served, never evicted.
    requested: Arc<AtomicBool>,
    /// Which connection it is, to take it off the list when it ends.
    id: u64,
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Connections {
    open: Mutex<Vec<Connection>>,
}

impl Connections {
    /// Takes a slot for a connection with `id`. At the cap, the oldest connection that has not
    /// sent its request line yet is shut down to make room (idle clients cannot keep a scrape
    /// out, however fast they reconnect); `None` when every slot serves a request. Also says
    /// whether the connections are crowded (more than half the slots taken).
    fn admit(&self, stream: &TcpStream, id: u64) -> Option<(Arc<AtomicBool>, bool)> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= MAX_CONNECTIONS {
            let idle = open
                .iter()
                .position(|c| !c.requested.load(Ordering::SeqCst))?;
            let evicted = open.remove(idle);
            let _ = evicted.stream.shutdown(Shutdown::Both);
        }
        let requested = Arc::new(AtomicBool::new(false));
        open.push(Connection {
            stream: stream.try_clone().ok()?,
            requested: Arc::clone(&requested),
            id,
        });
        Some((requested, open.len() > MAX_CONNECTIONS / 2))
    }

    /// Gives the slot of connection `id` back (once it is served, dropped or evicted).
    fn leave(&self, id: u64) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|c| c.id != id);
    }
}

/// Why an output of watch cannot be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OutputError {
    /// `--listen ADDR` cannot be bound.
    #[error("--listen {addr}: cannot listen there; choose another address or port")]
    Listen {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// `--textfile` is not named *.prom.
    #[error(
        "--textfile {}: node_exporter's textfile collector reads only *.prom files; name it so",
        file.display()
    )]
    NotProm {
        /// The file.
        file: PathBuf,
    },
    /// `--textfile`'s directory cannot be written.
    #[error(
        "--textfile {}: cannot write in {}; create the directory or make it writable",
        file.display(),
        dir.display()
    )]
    TextfileDir {
        /// The file.
        file: PathBuf,
        /// Its directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Serves `page` at http://ADDR/metrics (`--listen`), and returns the address bound (the
/// port chosen, for port 0).
pub(crate) fn listen(addr: &str, page: &SharedPage) -> Result<String, OutputError> {
    let listener = TcpListener::bind(addr).map_err(|source| OutputError::Listen {
        addr: addr.to_string(),
        source,
    })?;
    let bound = (listener.local_addr()).map_or(addr.to_string(), |a| a.to_string());
    serve(listener, page.clone());
    Ok(bound)
}

/// Refuses a `--textfile` whose directory does not exist or cannot be written, before
/// watching.
pub(crate) fn check_textfile(file: &Path) -> Result<(), OutputError> {
    if file.extension().is_none_or(|e| e != "prom") {
        return Err(OutputError::NotProm {
            file: file.to_path_buf(),
        });
    }
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .map_err(|source| OutputError::TextfileDir {
            file: file.to_path_buf(),
            dir: dir.to_path_buf(),
            source,
        })
}

/// Answers requests on `listener` from `page`, on threads of their own, until the process ends.
fn serve(listener: TcpListener, page: SharedPage) {
    let connections = Arc::new(Connections::default());
    std::thread::spawn(move || {
        for (id, stream) in (0u64..).zip(listener.incoming().flatten()) {
            let Some((requested, crowded)) = connections.admit(&stream, id) else {
                let _ = refuse(&stream, "503 Service Unavailable", "too many connections\n");
                continue;
            };
            let now = Instant::now();
            let head_deadline = now
                + if crowded {
                    CROWDED_HEAD_DEADLINE
                } else {
                    REQUEST_DEADLINE
                };
            let (page, slots) = (page.clone(), Arc::clone(&connections));
            let spawned = std::thread::Builder::new()
                .name("watch-http".into())
                .spawn(move || {
                    // A client that stalls or sends garbage is dropped; the others are served.
                    let deadlines = Deadlines {
                        head: head_deadline,
                        whole: now + REQUEST_DEADLINE,
                    };
                    let _ = answer(&stream, &page, deadlines, &requested);
                    slots.leave(id);
                });
            if spawned.is_err() {
                // No thread: this connection is dropped and its slot given back.
                connections.leave(id);
            }
        }
    });
}

/// When a connection's request must have come, and when its answer must have gone.
#[derive(Clone, Copy)]
struct Deadlines {
    /// For the request line and headers.
    head: Instant,
    /// For the whole exchange.
    whole: Instant,
}

/// What the request line and headers came to.
enum Head {
    /// The request line (`GET /metrics HTTP/1.1`); the headers were read to their end.
    Request(String),
    /// Too long: the status to answer (414 or 431).
    TooLong(&'static str),
}

fn answer(
    stream: &TcpStream,
    page: &SharedPage,
    deadlines: Deadlines,
    requested: &AtomicBool,
) -> std::io::Result<()> {
    let deadline = deadlines.whole;
    let request_line = match read_head(stream, deadlines.head, requested)? {
        Head::Request(line) => line,
        Head::TooLong(status) => return refuse(stream, status, "request too long\n"),
    };
    let mut words = request_line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => (
            "200 OK",
            CONTENT_TYPE,
            page.lock().map(|p| p.clone()).unwrap_or_default(),
        ),
        ("GET" | "HEAD", "/") => (
            "200 OK",
            "text/plain; charset=utf-8",
            "lowlat watch: the metrics are at /metrics\n".to_string(),
        ),
        ("GET" | "HEAD", _) => ("404 Not Found", "text/plain", "not found\n".to_string()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET\n".to_string(),
        ),
    };
    stream.set_write_timeout(Some(time_left(deadline)?))?;
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes())?;
    }
    stream.flush()
}

/// Reads the request line and the headers to their end (a scrape has no body), within
/// `deadline` and the line and head limits; sets `requested` once the request line is in.
fn read_head(
    stream: &TcpStream,
    deadline: Instant,
    requested: &AtomicBool,
) -> std::io::Result<Head> {
    let mut reader = BufReader::with_capacity(LINE_LIMIT, stream);
    let mut request_line: Option<String> = None;
    let mut total = 0;
    loop {
        let too_long = if request_line.is_none() {
            "414 URI Too Long"
        } else {
            "431 Request Header Fields Too Large"
        };
        let Some(line) = read_line(&mut reader, deadline)? else {
            return Ok(Head::TooLong(too_long));
        };
        total += line.len();
        if total > HEAD_LIMIT {
            return Ok(Head::TooLong("431 Request Header Fields Too Large"));
        }
        match request_line {
            None => {
                requested.store(true, Ordering::SeqCst);
                request_line = Some(String::from_utf8_lossy(&line).into_owned());
            }
            Some(request) if line.trim_ascii().is_empty() => return Ok(Head::Request(request)),
            Some(_) => {}
        }
    }
}

/// One line (to its `\n`), or `None` when it runs past [`LINE_LIMIT`]; an error when the
/// deadline passes or the client closes first.
fn read_line(
    reader: &mut BufReader<&TcpStream>,
    deadline: Instant,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    loop {
        reader
            .get_ref()
            .set_read_timeout(Some(time_left(deadline)?))?;
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Err(ErrorKind::UnexpectedEof.into());
        }
        let end = buffer.iter().position(|&b| b == b'\n');
        let taken = end.map_or(buffer.len(), |i| i + 1);
        line.extend_from_slice(&buffer[..taken]);
        reader.consume(taken);
        if line.len() > LINE_LIMIT {
            return Ok(None);
        }
        if end.is_some() {
            return Ok(Some(line));
        }
    }
}

/// The time until `deadline`, or a timeout error once it has passed.
fn time_left(deadline: Instant) -> std::io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ErrorKind::TimedOut.into());
    }
    Ok(left)
}

/// Answers `status` and closes, reading briefly what the client still sends so that the
/// close does not reset the connection before the client reads the answer.
fn refuse(stream: &TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    stream.set_write_timeout(Some(Duration::from_millis(200)))?;
    let mut writer = stream;
    write!(
        writer,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.shutdown(Shutdown::Write)?;
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let _ = std::io::copy(&mut stream.take(HEAD_LIMIT as u64), &mut std::io::sink());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_textfile_must_end_in_prom_and_its_directory_be_writable() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_textfile(&dir.path().join("lowlat.prom")).is_ok());
        let err = check_textfile(&dir.path().join("lowlat.txt")).unwrap_err();
        assert!(matches!(err, OutputError::NotProm { .. }), "{err}");
        let err = check_textfile(&dir.path().join("missing/lowlat.prom")).unwrap_err();
        assert!(err.to_string().contains("cannot write in"), "{err}");
    }
    use std::io::Read;

    fn get(addr: std::net::SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn serves_the_latest_page_at_metrics_and_404_elsewhere() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let page: SharedPage = Arc::new(Mutex::new("a 1\n".into()));
        serve(listener, page.clone());
        let first = get(addr, "/metrics");
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(
            first.contains(CONTENT_TYPE) && first.ends_with("\r\n\r\na 1\n"),
            "{first}"
        );
        *page.lock().unwrap() = "a 2\n".into();
        assert!(get(addr, "/metrics").ends_with("a 2\n"));
        assert!(get(addr, "/nope").starts_with("HTTP/1.1 404"));
    }

    fn server() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, Arc::new(Mutex::new("a 1\n".into())));
        addr
    }

    /// one connection was served at a time, so a client sending a byte a second, or ten
    /// silent ones, held every scrape back (51 s). Each is now on its own thread, and each has
    /// one deadline for its whole request, however slowly it trickles.
    #[test]
    fn slow_and_silent_clients_neither_delay_a_scrape_nor_stay_for_ever() {
        let addr = server();
        let silent: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let trickler = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            let started = Instant::now();
            for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: ".iter().cycle() {
                if stream.write_all(&[*byte]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
                if started.elapsed() > REQUEST_DEADLINE * 3 {
                    break;
                }
            }
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(300));
        let started = Instant::now();
        let scrape = get(addr, "/metrics");
        let took = started.elapsed();
        assert!(scrape.ends_with("a 1\n"), "{scrape}");
        assert!(took < Duration::from_secs(1), "the scrape took {took:?}");

        let cut_off = trickler.join().unwrap();
        assert!(
            cut_off >= REQUEST_DEADLINE - Duration::from_millis(500)
                && cut_off < REQUEST_DEADLINE + Duration::from_secs(2),
            "the trickling client was cut off after {cut_off:?}"
        );
        for mut stream in silent {
            stream
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            let mut rest = Vec::new();
            let closed = stream.read_to_end(&mut rest).is_ok();
            assert!(closed && rest.is_empty(), "a silent client was not closed");
        }
    }

    /// What the server answers to `head` (the request line and headers as sent).
    fn send(addr: std::net::SocketAddr, head: &[u8]) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        let _ = stream.write_all(head);
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    }

    /// the request line and headers were read without a limit (a 512 MiB line took
    /// 514 MB). Lines are cut at 8 KiB and the head at 64 KiB, answered 414 or 431.
    #[test]
    fn long_request_lines_and_headers_are_refused() {
        let addr = server();
        let long_target = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(LINE_LIMIT));
        assert!(
            send(addr, long_target.as_bytes()).starts_with("HTTP/1.1 414 "),
            "a 8 KiB request line"
        );
        let mut endless = b"GET /".to_vec();
        endless.resize(1 << 20, b'a');
        assert!(send(addr, &endless).starts_with("HTTP/1.1 414 "), "1 MiB");
        let long_header = format!(
            "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
            "b".repeat(LINE_LIMIT)
        );
        assert!(send(addr, long_header.as_bytes()).starts_with("HTTP/1.1 431 "));
        let many = format!(
            "GET /metrics HTTP/1.1\r\n{}\r\n",
            format!("X: {}\r\n", "c".repeat(4000)).repeat(20)
        );
        assert!(send(addr, many.as_bytes()).starts_with("HTTP/1.1 431 "));
        let fine = format!(
            "GET /metrics HTTP/1.1\r\n{}\r\n",
            format!("X: {}\r\n", "c".repeat(4000)).repeat(15)
        );
        assert!(send(addr, fine.as_bytes()).ends_with("a 1\n"));
    }

    /// More clients than [`MAX_CONNECTIONS`] at once, each with its request line sent, are
    /// answered 503, and a scrape is served again once they are gone.
    #[test]
    fn connections_beyond_the_cap_are_refused() {
        let addr = server();
        let held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| {
                let mut stream = TcpStream::connect(addr).unwrap();
                stream.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
                stream
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        assert!(get(addr, "/metrics").starts_with("HTTP/1.1 503 "));
        drop(held);
        std::thread::sleep(Duration::from_millis(200));
        assert!(get(addr, "/metrics").ends_with("a 1\n"));
    }

    /// R2-5: 64 idle connections, opened again as the server closed them, made every scrape
    /// 503. At the cap a scrape takes the slot of the oldest idle one, again and again.
    #[test]
    fn idle_connections_at_the_cap_never_keep_a_scrape_out() {
        let addr = server();
        let mut idle: Vec<TcpStream> = Vec::new();
        for round in 0..3 {
            // Every slot taken by idle clients (those the server closed are reopened).
            while idle.len() < MAX_CONNECTIONS {
                idle.push(TcpStream::connect(addr).unwrap());
            }
            std::thread::sleep(Duration::from_millis(200));
            let scrape = get(addr, "/metrics");
            assert!(scrape.ends_with("a 1\n"), "round {round}: {scrape}");
            // The closed ones read as ended (or reset), the others time out.
            let before = idle.len();
            idle.retain_mut(|stream| {
                stream
                    .set_read_timeout(Some(Duration::from_millis(20)))
                    .unwrap();
                match stream.read(&mut [0u8; 16]) {
                    Ok(0) => false,
                    Err(e) => matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                    Ok(_) => true,
                }
            });
            let closed = before - idle.len();
            // At least the one evicted; those admitted into a crowd had a second for their head.
            assert!(closed >= 1, "round {round}: none evicted");
        }
    }
}
